"""A LangGraph refund desk: the graph that ran, the fix, a run that refunded twice.

``python -m sample_checkpoints.langgraph_refund [DIR]`` writes, with the real LangGraph and
its SqliteSaver, ``DIR/refund-graph.sqlite`` (the checkpointer database) and
``DIR/payments.sqlite`` (the payment gateway's own ledger, what the tools read and write).
docs/replay.md, "LangGraph", replays its threads.
"""
