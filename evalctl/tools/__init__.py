"""Real tool implementations cases call, executed through a recording spy."""
