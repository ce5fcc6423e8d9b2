"""Replaying a LangGraph run: the graph, restored at a checkpoint, against the recording.

Parent side: :mod:`.original` reads what the replay needs from the store. Child side (in
the sandbox): :mod:`.load` compiles ``MODULE:ATTR`` on an in-memory saver, :mod:`.revive`
and :mod:`.restore` put the checkpoint back as LangGraph would have it, :mod:`.intercept`
answers chat models and tools from the recorded world (:mod:`.world`), and :mod:`.runner`
runs the graph superstep by superstep, reporting each step as a native replay does.
docs/replay.md, "LangGraph", is the user's view.
"""
