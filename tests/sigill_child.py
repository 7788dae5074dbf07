"""A stand-in for `evalctl.server.selfcheck` that dies as an AMX build does on such a CPU: it
reports its build's features, then raises SIGILL (tests/test_llama_build.py)."""

import json
import os
import signal

INFO = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1"

print(json.dumps({"system_info": INFO}), flush=True)
os.kill(os.getpid(), signal.SIGILL)
