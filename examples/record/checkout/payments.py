"""Payment lifecycle: one step of the state machine per event."""


def step(s, a):
    if s.status == "requires_capture" and a.c == "capture" and not a.needs_action:
        return executed(s)
    if s.stored and a.c == "capture":
        return replayed(s)
    if a.c == "cancel":
        return rejected(s) if s.status == "succeeded" else ignored(s)
    return conflicted(s)
