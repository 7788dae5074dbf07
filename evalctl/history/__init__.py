"""The run store: every run, verdict and case kept across runs, and the questions asked of
them (a case's history, flaky cases, changes, trends). docs/history.md describes it."""
