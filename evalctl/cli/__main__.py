"""`python -m evalctl.cli`: the same entry point as the `evalctl` console script."""

from evalctl.cli.app import main

main()
