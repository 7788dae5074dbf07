"""Stability of the local inference daemon: soak with a leak verdict, crash-test, and the
restart-per-case wrapper behind `evalctl run --restart-per-case`."""
