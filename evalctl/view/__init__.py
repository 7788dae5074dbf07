"""`evalctl view`: server-rendered pages over the run store, served live (`app`) or written
as a static site (`static`). It only reads the store; every page is built by `pages` and
drawn by the Jinja2 templates beside it, with autoescape on (transcripts are untrusted)."""
