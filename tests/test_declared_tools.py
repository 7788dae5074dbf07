"""`[[suite.tool]]` backends (fixture, command, python) run through the ToolSpy: each call's
arguments and returned value are recorded, and every failure of a tool (unknown entry,
non-zero exit, timeout, exception) goes back to the model as a tool error, never a harness
error."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.assert_helpers import evalctl

SUITE = """
[suite]
name = "orders"
kind = "assert"
system_prompt = "You answer questions about orders."
max_turns = 4
tools = ["lookup_order", "carrier_status", "refund_quote", "stuck"]

[[suite.tool]]
name = "lookup_order"
description = "An order by id"
parameters.type = "object"
parameters.properties.order_id = { type = "string" }
parameters.required = ["order_id"]
fixture = "data/orders.json"
key = "order_id"

[[suite.tool]]
name = "carrier_status"
description = "Where a parcel is"
parameters = { type = "object", properties = { tracking = { type = "string" } } }
command = ["python3", "tools/carrier.py"]
# A guard, not a measurement: a busy machine can take seconds to start an interpreter.
timeout_s = 120

[[suite.tool]]
name = "refund_quote"
description = "How much a refund would be"
parameters = { type = "object", properties = { order_id = { type = "string" } } }
python = "shoptools.refunds:quote"

[[suite.tool]]
name = "stuck"
description = "Never answers"
command = ["python3", "-c", "import time\\nwhile True: time.sleep(1)"]
timeout_s = 0.5

[[case]]
id = "late-parcel"
input = { prompt = "Where is order A-1?" }
[[case.assert]]
type = "tool-called"
name = "lookup_order"
args = { order_id = "A-1" }
[[case.assert]]
type = "cites-tool-result"
tool = "carrier_status"
path = "where"
"""

CARRIER = """\
import json, sys
args = json.load(sys.stdin)
if args.get("tracking") == "BROKEN":
    print("carrier API down", file=sys.stderr)
    sys.exit(3)
print(json.dumps({"tracking": args["tracking"], "where": "Lyon depot"}))
"""

REFUNDS = """\
def quote(order_id):
    if order_id == "A-1":
        return {"amount": 12.5, "currency": "EUR"}
    raise LookupError(f"no order {order_id}")
"""

REPLIES = """\
[[cases."orders/late-parcel"]]
tool_calls = [
  { name = "lookup_order", arguments = { order_id = "A-1" } },
  { name = "lookup_order", arguments = { order_id = "Z-9" } },
  { name = "carrier_status", arguments = { tracking = "TRK1" } },
  { name = "carrier_status", arguments = { tracking = "BROKEN" } },
  { name = "refund_quote", arguments = { order_id = "A-1" } },
  { name = "refund_quote", arguments = { order_id = "Z-9" } },
  { name = "stuck", arguments = {} },
]

[[cases."orders/late-parcel"]]
content = "Order A-1 is at the Lyon depot."
"""


def _suite(root: Path) -> Path:
    (root / "data").mkdir()
    (root / "data" / "orders.json").write_text(
        json.dumps({"A-1": {"status": "shipped", "tracking": "TRK1"}})
    )
    (root / "tools").mkdir()
    (root / "tools" / "carrier.py").write_text(CARRIER)
    (root / "shoptools").mkdir()
    (root / "shoptools" / "__init__.py").write_text("")
    (root / "shoptools" / "refunds.py").write_text(REFUNDS)
    path = root / "orders.toml"
    path.write_text(textwrap.dedent(SUITE))
    (root / "replies.toml").write_text(REPLIES)
    return path


def test_each_backend_records_calls_and_turns_failures_into_tool_errors(tmp_path: Path) -> None:
    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    suite = _suite(suite_dir)
    ran = evalctl(
        tmp_path,  # not the suite's directory: every path must resolve from the suite file
        "run",
        "--provider",
        "scripted",
        "--script",
        str(suite_dir / "replies.toml"),
        "--cases",
        str(suite),
        "--out",
        "out",
        "--json",
    )
    assert ran.returncode == 0, ran.stderr
    case = json.loads((tmp_path / "out" / "results.json").read_text())["cases"][0]
    assert case["status"] == "pass", case["checks"]
    calls = [(c["name"], c["arguments"], c["is_error"]) for c in case["tool_calls"]]
    assert calls == [
        ("lookup_order", {"order_id": "A-1"}, False),
        ("lookup_order", {"order_id": "Z-9"}, True),
        ("carrier_status", {"tracking": "TRK1"}, False),
        ("carrier_status", {"tracking": "BROKEN"}, True),
        ("refund_quote", {"order_id": "A-1"}, False),
        ("refund_quote", {"order_id": "Z-9"}, True),
        ("stuck", {}, True),
    ]
    values = [c["data"].get("value") for c in case["tool_calls"]]
    assert values[0] == {"status": "shipped", "tracking": "TRK1"}
    assert values[2] == {"tracking": "TRK1", "where": "Lyon depot"}
    assert values[4] == {"amount": 12.5, "currency": "EUR"}
    errors = [c["result"] for c in case["tool_calls"] if c["is_error"]]
    assert "no result for order_id='Z-9'" in errors[0]
    assert "exited with status 3: carrier API down" in errors[1]
    assert "LookupError: no order Z-9" in errors[2]
    assert "timed out after 0.5s" in errors[3]


def test_validate_checks_every_file_and_module_a_suite_names(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    (tmp_path / "data" / "orders.json").write_text("[1, 2]")
    (tmp_path / "tools" / "carrier.py").unlink()
    (tmp_path / "shoptools" / "refunds.py").write_text("def other(): pass\n")
    text = suite.read_text().replace('key = "order_id"', 'key = "order"')
    suite.write_text(text)
    checked = evalctl(tmp_path.parent, "cases", "validate", str(suite))
    assert checked.returncode == 2
    assert "Traceback" not in checked.stderr
    err = " ".join(checked.stderr.split())  # Rich wraps long lines
    for needle in (
        "field 'suite.tool[1].fixture': fixture",
        "must hold a JSON object",
        "field 'suite.tool[1].key': 'order' is not one of the tool's parameters (known: order_id)",
        "field 'suite.tool[2].command': file not found: tools/carrier.py",
        "field 'suite.tool[3].python': module 'shoptools.refunds' has no attribute 'quote'",
    ):
        assert needle in err, err
