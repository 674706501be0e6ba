"""`bakeoff run --kernel`: rooms run on other kernels, each booted in a virtme-ng guest.

The kernel is an axis of one run: each kernel's image is found or fetched (`images`), booted
with the host's root shared read-only and a private /tmp, the room's trials run inside
(`inside`), and the results come back as files (`guest`); the analysis runs on the host.
Two modes, chosen by the machine (`mode`): functional (a short trial per variant; any
machine, an emulator allowed) and timed (boots as the unit; hardware KVM only).
"""
