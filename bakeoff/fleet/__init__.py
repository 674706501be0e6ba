"""bakeoff on many hosts: Ansible pushes the committed checkout, sets it up, runs, fetches.

checkout.py   what is pushed: the committed tree (a dirty one is refused), as one archive
wheelhouse.py the pinned Python dependencies as wheels, for hosts without PyPI access
record.py     fleet.json: per host reachability, exit status, reason, run IDs, phase times
driver.py     runs fleet/playbook.yml with ansible-playbook and reads its event stream
progress.py   one line per host per phase on a pipe, a live table on a terminal
"""
