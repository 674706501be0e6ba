"""`bakeoff bisect`: the first commit where a program got slower, measured interleaved."""
