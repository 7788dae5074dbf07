"""evalctl: golden-case regression testing for LLM-powered features."""

__version__ = "0.1.0"
