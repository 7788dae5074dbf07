"""Stability of the local inference daemon: soak with a leak verdict, and crash-test."""
