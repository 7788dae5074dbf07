"""Judgements kept under `EVALCTL_HOME/judge-cache/`, so re-running a suite costs nothing.

The key is a SHA-256 over (judge provider, judge model, prompt version, rubric, case input,
answer, and the mode when graded): the same question to the same judge gets the stored verdict
back, and any change to one of them asks again. A graded judgement stores its score; the
threshold is not part of the key, since the judge never sees it. Only real verdicts are
stored, never a judge that failed to answer. One JSON file per judgement
(`ab/abcdef....json`), written atomically; a file that does not parse is treated as absent.
The directory is private (0700): answers may be confidential.

Runs sharing one home may judge the same question at once. `put` holds the cache's lock
(`judge-cache/.lock`) and re-reads the entry under it: the first verdict stored stays, so every
later run reads the same one, and no writer replaces a file another is reading.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalctl import flock, userfiles
from evalctl.chat import Usage
from evalctl.config import ensure_private_dir, private_home_for
from evalctl.judge.prompt import PROMPT_VERSION, Verdict
from evalctl.results.io import write_text_atomic

CACHE_DIR = "judge-cache"
LOCK = ".lock"


class CachedJudgement(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    reason: str
    reply: str
    provider: str
    model: str
    usage: Usage
    cost_usd: float | None = None
    # Set by a graded judgement (absent from entries written before graded mode).
    score: float | None = Field(default=None, ge=0, le=1)


def cache_key(
    provider: str, model: str, rubric: str, case_input: str, answer: str, *, graded: bool = False
) -> str:
    fields: list[object] = [provider, model, PROMPT_VERSION, rubric, case_input, answer]
    if graded:
        # Appended rather than always present, so a pass/fail verdict keeps the key it had
        # before graded mode existed and an upgrade does not ask (and bill) every judge again.
        fields.append("graded")
    return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode()).hexdigest()


class JudgeCache:
    """A directory of judgements; `enabled=False` (`--no-judge-cache`) reads and writes none."""

    def __init__(self, home: Path, *, enabled: bool = True):
        self._home = home
        self._directory: Path | None = None
        self.enabled = enabled

    @property
    def directory(self) -> Path:
        # Under the private home (a shared EVALCTL_HOME gets an evalctl-<uid>/ inside it),
        # resolved on first use so a run that never judges never touches the home.
        if self._directory is None:
            self._directory = private_home_for(self._home) / CACHE_DIR
        return self._directory

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedJudgement | None:
        if not self.enabled:
            return None
        return self._read(self._path(key))

    @staticmethod
    def _read(path: Path) -> CachedJudgement | None:
        try:
            return CachedJudgement.model_validate_json(path.read_text("utf-8"))
        except (OSError, ValueError, ValidationError):
            return None

    def put(self, key: str, judgement: CachedJudgement) -> None:
        if not self.enabled:
            return
        path = self._path(key)
        ensure_private_dir(self.directory)
        ensure_private_dir(path.parent)
        with self._locked():
            if self._read(path) is not None:
                return  # another run stored this judgement first: keep one answer
            write_text_atomic(path, judgement.model_dump_json(indent=2) + "\n")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        lock = self.directory / LOCK
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(flock.held(lock))
            except OSError as exc:
                # A read-only or full home is the machine's fault: exit 3 saying so.
                error = userfiles.environment_error(exc, "lock the judge cache", lock)
                if error is None:
                    raise
                raise error from None
            yield
