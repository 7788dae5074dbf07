"""Scoring: named checks that turn a case transcript into CheckResults."""
