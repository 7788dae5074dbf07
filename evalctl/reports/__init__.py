"""Renderings of results: HTML pages (run, soak, crash-test), JUnit, Markdown and the
runbooks' results sections. Records live in `evalctl.results` and `evalctl.stability`; a
renderer only reads them (the command computes anything it shows, such as a comparison)."""
