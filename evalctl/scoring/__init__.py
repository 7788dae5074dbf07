"""Scoring: one way to turn a case's transcript into checks and a status.

`check` (the `Check` protocol and the `ScoringContext` every check judges), `answer` (the one
reading of the final answer), `score` (`score_case`: which checks run, in order), `verdict`
(the status from the checks, and over repeats); docs/architecture.md draws the path.
"""
