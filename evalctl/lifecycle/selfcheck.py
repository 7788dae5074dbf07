"""`make setup`'s last step: does the llama.cpp just built run on this machine?

A build that crashes natively (SIGILL from an instruction this CPU refuses, or from ggml's AMX
path) would otherwise surface as every local case in error, or as pytest killed with no
summary. So setup loads the embedded model in a child process (`evalctl.server.selfcheck`),
generates a few tokens and embeds a sentence; a crash stops setup with the signal, the CPU
flags that matter, and the way out. Run it again any time: `python -m evalctl.lifecycle.selfcheck`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field

from evalctl.lifecycle import native
from evalctl.server.hardware import cpu_features

TIMEOUT_S = 600.0


@dataclass
class SelfCheck:
    """What the child reported, line by line, and how it ended."""

    returncode: int
    facts: dict[str, object] = field(default_factory=dict)
    stderr: str = ""

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode < 0 else None


def run_child(python: str = sys.executable, module: str = "evalctl.server.selfcheck") -> SelfCheck:
    proc = subprocess.run(
        [python, "-m", module],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    facts: dict[str, object] = {}
    for line in proc.stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            facts.update(record)
    return SelfCheck(proc.returncode, facts, proc.stderr)


def report(check: SelfCheck) -> tuple[int, str]:
    """(exit status, text) for a finished self-check."""
    info = str(check.facts.get("system_info", ""))
    if check.returncode == 0 and "embedding_dims" in check.facts:
        return 0, (
            f"llama.cpp self-check passed: generated {check.facts.get('generated_tokens')} "
            f"tokens and embedded a sentence ({check.facts['embedding_dims']} dimensions); "
            f"build features: {', '.join(cpu_features(info)) or 'none'}"
        )
    flags = native.cpu_flags()
    shown = ", ".join(sorted(f for f in flags or () if f in native.RELEVANT_FLAGS)) or "unknown"
    if check.signal is not None:
        if info:
            build = native.BuildProbe(features=tuple(cpu_features(info)))
            done = "generated_tokens" in check.facts
            stage = "embedding a sentence" if done else "loading the model or generating"
        else:
            build = native.BuildProbe(died_of=check.signal)
            stage = "loading llama.cpp"
        return 1, (
            f"llama.cpp self-check FAILED: the child died of {native.signal_name(check.signal)} "
            f"while {stage}.\nthis CPU's flags that matter: {shown}\n"
            f"{native.explain(build, flags)}"
        )
    tail = "\n".join(check.stderr.strip().splitlines()[-15:])
    return 1, f"llama.cpp self-check FAILED (exit {check.returncode}):\n{tail}"


def main() -> int:
    status, text = report(run_child())
    print(text, file=sys.stderr if status else sys.stdout)
    return status


if __name__ == "__main__":
    sys.exit(main())
