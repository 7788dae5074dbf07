"""The HTML kit every page is built with: an element tree written by one escaping serializer
(`elements`), the page shell with its inline CSS (`page`), tables (`table`), cards and status
badges (`card`) and the frame every SVG chart is drawn in (`svg`).

Self-contained means the file is the whole report: inline CSS, inline SVG, no script, no
font, image or stylesheet fetched from anywhere. It has to open from a CI artifact, an
e-mail attachment or an air-gapped machine, and must not phone home when it does.
"""
