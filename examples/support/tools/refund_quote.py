"""refund_quote: a command-backed tool. Reads the arguments as JSON on stdin and prints the
result as JSON on stdout; a non-zero exit is reported to the model as a tool error."""

import json
import sys

args = json.load(sys.stdin)
total = args.get("total")
days = args.get("days_since_delivery")
if not isinstance(total, int | float) or not isinstance(days, int) or days < 0:
    print("need a numeric total and a non-negative days_since_delivery", file=sys.stderr)
    sys.exit(2)
# Full refund within 14 days of delivery, half within 30, nothing after.
share = 1.0 if days <= 14 else 0.5 if days <= 30 else 0.0
print(json.dumps({"refundable": share > 0, "amount": round(total * share, 2), "currency": "EUR"}))
