"""Memory across runs: a history database of recorded runs (store.py), the runs' records put
into it (record.py), per series the runs and where their level changed (listing.py, with the
change points of changes.py), and one offline page of the trends (page.py). A feature above
analysis: it reads results directories through bakeoff.store and never the command line's
modules."""
