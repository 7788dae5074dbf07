"""The leak verdict of a soak, judged on the daemon's anonymous memory.

Why anonymous memory: RSS and even USS include the mmap'd model file, whose pages are
counted as they are touched; that grows for a while and is not a leak. Anonymous memory
(`RssAnon`) is what the process allocated itself: heap, KV cache, sampler buffers.

The rule (also in runbooks/soak.md; keep the two in step):

1. The *window* is every sample taken after at least `warmup` requests (request index >=
   warmup). Warm-up growth (grammar compilation, first touches of the KV cache, allocator
   arenas) happens before it and is ignored.
2. The *baseline* is the first sample of the window, the *final* value the last one;
   growth = (final - baseline) / baseline, in percent.
3. A least-squares line is fitted to (request index, anonymous bytes) over the window: its
   slope in bytes per request and its R² (the share of the variance the line explains).
   A second line is fitted to the second half of the window (its last ceil(n/2) samples):
   the late slope.
4. Growth is *steady* when slope > 0, R² >= MIN_R_SQUARED (0.5) and the late slope is at
   least LATE_SLOPE_SHARE (half) of the slope: memory still grows at the end as it did
   throughout.
5. Verdict:
   - `inconclusive` when the window holds fewer than MIN_WINDOW_SAMPLES (3) samples;
   - `leak` when growth > threshold (default 5%) AND the growth is steady;
   - `no leak` otherwise.

Growth alone would call one step a leak; a fit alone would call a steady but negligible
drift one. Requiring both means memory must have grown by more than the threshold *and*
kept growing. A step then a plateau fits a line badly when it comes early (a step after the
first window sample gives R² of about 0.15 over 20 samples) and leaves a flat second half
when it comes a third of the way in (R² can reach 0.65 there, measured on the daemon, whose
allocator takes an 11 MiB step when a request first lands in a fresh per-thread arena).
Noise around a flat line gives a slope near zero and a low R². A leak, even one that grows
in allocator-sized chunks, fits well in both halves. A step late in the window still reads
as a leak: rerun longer, and if memory then stays flat the verdict clears.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

DEFAULT_THRESHOLD_PCT = 5.0
MIN_R_SQUARED = 0.5
LATE_SLOPE_SHARE = 0.5
MIN_WINDOW_SAMPLES = 3

VerdictName = Literal["no leak", "leak", "inconclusive"]


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: VerdictName
    reason: str
    # The metric judged; only anonymous memory is, see the module docstring.
    metric: Literal["anon_bytes"] = "anon_bytes"
    warmup: int
    threshold_pct: float
    min_r_squared: float = MIN_R_SQUARED
    window_samples: int = 0
    baseline_request: int | None = None
    baseline_bytes: int | None = None
    final_bytes: int | None = None
    growth_bytes: int | None = None
    growth_pct: float | None = None
    slope_bytes_per_request: float | None = None
    r_squared: float | None = None
    # The slope over the second half of the window: a leak still grows there.
    late_slope_bytes_per_request: float | None = None


@dataclass(frozen=True)
class LineFit:
    slope: float
    intercept: float
    r_squared: float


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> LineFit:
    """Ordinary least squares y = intercept + slope * x, with R².

    A perfectly flat series has no variance to explain: its R² is reported as 0 (the line
    explains nothing that was there), so flat memory never reads as a good linear fit.
    """
    n = len(xs)
    if n != len(ys) or n < 2:
        raise ValueError("fit_line needs two or more (x, y) pairs")
    mean_x = sum(xs) / n
    mean_y = sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("fit_line needs at least two distinct x values")
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    syy = sum((y - mean_y) ** 2 for y in ys)
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    r_squared = 0.0 if syy == 0 else (sxy * sxy) / (sxx * syy)
    return LineFit(slope=slope, intercept=intercept, r_squared=min(1.0, r_squared))


def judge(
    points: Sequence[tuple[int, int]],
    *,
    warmup: int,
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    min_r_squared: float = MIN_R_SQUARED,
) -> Verdict:
    """Judge (request index, anonymous bytes) samples, in request order, by the rule above."""
    window = sorted((r, b) for r, b in points if r >= warmup)
    base = Verdict(
        verdict="inconclusive",
        reason="",
        warmup=warmup,
        threshold_pct=threshold_pct,
        min_r_squared=min_r_squared,
        window_samples=len(window),
    )
    if len(window) < MIN_WINDOW_SAMPLES or window[0][0] == window[-1][0]:
        base.reason = (
            f"only {len(window)} samples after the {warmup}-request warm-up; "
            f"the verdict needs {MIN_WINDOW_SAMPLES}"
        )
        return base
    (first_request, baseline), (_, final) = window[0], window[-1]
    fit = fit_line([float(r) for r, _ in window], [float(b) for _, b in window])
    late = window[len(window) // 2 :]
    late_slope = fit_line([float(r) for r, _ in late], [float(b) for _, b in late]).slope
    growth = final - baseline
    growth_pct = 100.0 * growth / baseline if baseline > 0 else 0.0
    fits = fit.slope > 0 and fit.r_squared >= min_r_squared
    persists = late_slope >= LATE_SLOPE_SHARE * fit.slope
    leak = growth_pct > threshold_pct and fits and persists
    measured = (
        f"anonymous memory {_pct(growth_pct)} over requests {first_request}-{window[-1][0]} "
        f"(slope {_bytes(fit.slope)}/request, R² {fit.r_squared:.2f}, "
        f"second half {_bytes(late_slope)}/request)"
    )
    if leak:
        reason = f"{measured}: above {threshold_pct:g}% and still growing steadily"
    elif growth_pct > threshold_pct and not fits:
        reason = f"{measured}: above {threshold_pct:g}% but a line fits badly: a step, not a leak"
    elif growth_pct > threshold_pct:
        reason = (
            f"{measured}: above {threshold_pct:g}% but flat in the second half: "
            "a step then a plateau, not a leak"
        )
    else:
        reason = f"{measured}: within {threshold_pct:g}%"
    return base.model_copy(
        update={
            "verdict": "leak" if leak else "no leak",
            "reason": reason,
            "baseline_request": first_request,
            "baseline_bytes": baseline,
            "final_bytes": final,
            "growth_bytes": growth,
            "growth_pct": round(growth_pct, 3),
            "slope_bytes_per_request": round(fit.slope, 1),
            "r_squared": round(fit.r_squared, 4),
            "late_slope_bytes_per_request": round(late_slope, 1),
        }
    )


def _pct(value: float) -> str:
    return f"{value:+.2f}%"


def _bytes(value: float) -> str:
    magnitude = abs(value)
    if magnitude >= 1024 * 1024:
        return f"{value / (1024 * 1024):+.2f} MiB"
    if magnitude >= 1024:
        return f"{value / 1024:+.1f} KiB"
    return f"{value:+.0f} B"
