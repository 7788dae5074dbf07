"""Providers: one module each, created lazily through `registry` so vendor SDKs load on demand."""
