"""A case's time limit: one the user set, or one sized from the machine's measured speed.

A fixed limit confuses hardware with quality: a machine five times slower than the one a
suite was written on would time out instead of answering. Where the provider measured its
speed on this machine (the local daemon: a warm-up at load, then recent requests), the
limit follows the case's token budget at that speed:

    limit = max(floor, turns x (max_tokens / generation tok/s + prompt / prompt tok/s) x SAFETY)

`turns` is the case's turn budget plus the last answer turn the runner may add; the prompt
is estimated from the opening request's characters, counted in full every turn although
the KV cache usually holds most of it (a limit that is too generous costs nothing unless
the case hangs). `floor` is the configured case timeout (`case_timeout_s`, 120 s), so a
fast machine keeps today's limit. A limit the user set (`--timeout`, a case's or suite's
`timeout_s`) is taken as given. Cloud providers report no speed: their limit is the floor.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalctl.providers.base import Speed

# Room for what the estimate leaves out: a slower stretch, longer prompts on later turns.
SAFETY = 2.0
# Characters per token assumed for the prompt estimate; low, so the estimate errs long.
CHARS_PER_TOKEN = 3.0


@dataclass(frozen=True)
class TimeLimit:
    seconds: float
    # Set by the user (taken as given), or sized from `speed` (None: the floor alone).
    explicit: bool = False
    speed: Speed | None = None

    def timed_out(self, elapsed_s: float | None = None) -> str:
        """The message of a case that ran out of this limit, with the speed it assumed."""
        after = f"{self.seconds:g}s" if elapsed_s is None else f"{elapsed_s:.0f}s"
        head = f"case timed out after {after} (time limit {self.seconds:.0f}s"
        if self.explicit:
            return f"{head}, as set)"
        if self.speed is None:
            return f"{head}, the configured case timeout; no measured speed)"
        prompt = (
            f", prompt {self.speed.prompt_tokens_per_s:.1f} tok/s"
            if self.speed.prompt_tokens_per_s
            else ""
        )
        return (
            f"{head}, sized from generation at {self.speed.gen_tokens_per_s:.1f} tok/s"
            f"{prompt}, {self.speed.source or 'measured'})"
        )


def limit_from_speed(
    *,
    floor_s: float,
    turns: int,
    max_tokens: int,
    prompt_tokens: int,
    speed: Speed,
    safety: float = SAFETY,
) -> float:
    """The formula in the module docstring: a pure function of the budget and the speed."""
    per_turn = max_tokens / speed.gen_tokens_per_s
    if speed.prompt_tokens_per_s:
        per_turn += prompt_tokens / speed.prompt_tokens_per_s
    return max(floor_s, turns * per_turn * safety)


def case_limit(
    *,
    explicit_s: float | None,
    floor_s: float,
    turns: int,
    max_tokens: int,
    prompt_chars: int,
    speed: Speed | None,
) -> TimeLimit:
    if explicit_s is not None:
        return TimeLimit(explicit_s, explicit=True)
    if speed is None or speed.gen_tokens_per_s <= 0:
        return TimeLimit(floor_s)
    seconds = limit_from_speed(
        floor_s=floor_s,
        turns=turns,
        max_tokens=max_tokens,
        prompt_tokens=round(prompt_chars / CHARS_PER_TOKEN),
        speed=speed,
    )
    return TimeLimit(round(seconds, 1), speed=speed)
