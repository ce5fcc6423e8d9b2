"""Deriving ``runs`` from checkpoints and effects.

The status rule, in order (first match wins); docs/status.md says the same for users:

1. the head checkpoint's ``metadata.status`` names a known status: that status (the reason
   is the head's ``metadata.status_reason`` when it gives one);
2. the head's ``metadata.error`` is set: ``failed``;
3. the head's ``metadata.interrupt`` (or ``awaiting_approval``) is set: ``parked``;
4. a budget consumed at the head reached its limit in ``metadata.limits``
   (``tokens``, ``steps``, ``wall_clock_ms``): ``budget_exhausted``;
5. the head lists pending effects, or an effect recorded at or after the head's step is
   still ``pending`` or ``unknown``: ``crashed`` (it died with work in flight);
6. the head is older than ``stale_after`` (default one hour) with none of the above:
   ``crashed`` (it stopped writing without saying why);
7. otherwise ``in_progress``.

The head is the checkpoint written last (by ``created_at``, then step, then insertion order),
so a fork re-run from an old checkpoint makes the fork's newest checkpoint the head.
"""

from __future__ import annotations

import duckdb

from debugger.model import RUN_STATUSES

STALE_AFTER_SECONDS = 3600
"""A run with no terminal status and no checkpoint for this long is taken as crashed."""

_KNOWN = ", ".join(f"'{s}'" for s in RUN_STATUSES)


def derive_runs(con: duckdb.DuckDBPyConnection, stale_after_s: int = STALE_AFTER_SECONDS) -> int:
    """Recompute ``runs`` rows for every run id in the temp table ``_touched`` (and any missing).

    Returns:
        The number of runs recomputed.
    """
    # Runs that have checkpoints but no derived row (an earlier import stopped before this
    # step) are derived too, so an interrupted import heals on the next one.
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE _tr AS
        SELECT run_id FROM _touched
        UNION SELECT run_id FROM run_keys WHERE run_id NOT IN (SELECT run_id FROM runs)"""
    )
    row = con.execute("SELECT count(*) FROM _tr").fetchone()
    if not (row and row[0]):
        # nothing since the last derivation (an import's last commit after its passes)
        return 0
    con.execute("DELETE FROM runs WHERE run_id IN (SELECT run_id FROM _tr)")
    con.execute(
        f"""
        INSERT INTO runs
        WITH c AS (
            -- every column but the state: the head's window would otherwise carry them all
            SELECT ckpt_key, run_id, checkpoint_id, step_index, created_at, tokens_spent,
                   steps_spent, wall_clock_ms, pending_effects, model_version, schema_version,
                   metadata
            FROM checkpoint_rows WHERE run_id IN (SELECT run_id FROM _tr)
        ),
        head_key AS (
            -- the window sorts the ordering columns alone; the head's row is fetched after
            SELECT ckpt_key FROM (SELECT run_id, created_at, step_index, ckpt_key FROM c)
            QUALIFY row_number() OVER (
                PARTITION BY run_id
                ORDER BY created_at DESC NULLS LAST, step_index DESC, ckpt_key DESC) = 1
        ),
        head AS (SELECT * FROM c WHERE ckpt_key IN (SELECT ckpt_key FROM head_key)),
        agg AS (
            SELECT run_id, min(step_index) AS first_step, count(*) AS n,
                   min(created_at) AS first_at, max(created_at) AS last_at,
                   max_by(err, ckpt_key) FILTER (WHERE err IS NOT NULL) AS last_error
            FROM (
                -- each document read once; an error the run was retried past is in
                -- task_errors (it has a child)
                SELECT run_id, step_index, created_at, ckpt_key,
                       coalesce((metadata->>'error'), (metadata->>'$.task_errors[#-1]')) AS err
                FROM c)
            GROUP BY run_id
        ),
        versions AS (
            SELECT run_id, to_json(list(model_version ORDER BY seen)) AS model_versions
            FROM (SELECT run_id, model_version, min(ckpt_key) AS seen FROM c
                  WHERE model_version IS NOT NULL GROUP BY run_id, model_version)
            GROUP BY run_id
        ),
        schemas AS (
            SELECT run_id, to_json(list(schema_version ORDER BY schema_version)) AS sv
            FROM (SELECT DISTINCT run_id, schema_version FROM c
                  WHERE schema_version IS NOT NULL)
            GROUP BY run_id
        ),
        open_effects AS (
            SELECT e.run_id, count(*) AS n FROM effects e JOIN head h USING (run_id)
            WHERE e.status IN ('pending', 'unknown') AND e.step_index >= h.step_index
              AND NOT EXISTS (
                  SELECT 1 FROM effects d WHERE d.run_id = e.run_id
                    AND d.idempotency_key = e.idempotency_key
                    AND d.status IN ('committed', 'failed'))
            GROUP BY e.run_id
        ),
        h AS (
            SELECT h.*, coalesce(json_array_length(h.pending_effects), 0) AS pending_n,
                   (h.metadata->'limits') AS limits,
                   TRY_CAST((h.metadata->>'$.limits.tokens') AS BIGINT) AS lim_tokens,
                   TRY_CAST((h.metadata->>'$.limits.steps') AS BIGINT) AS lim_steps,
                   TRY_CAST((h.metadata->>'$.limits.wall_clock_ms') AS BIGINT) AS lim_wall,
                   lower((h.metadata->>'status')) AS meta_status
            FROM head h
        )
        SELECT h.run_id, k.run_num, (h.metadata->>'agent'),
            CASE
                WHEN h.meta_status IN ({_KNOWN}) THEN h.meta_status
                WHEN (h.metadata->>'error') IS NOT NULL THEN 'failed'
                WHEN (h.metadata->'interrupt') IS NOT NULL
                     OR (h.metadata->>'awaiting_approval') = 'true' THEN 'parked'
                WHEN h.tokens_spent >= h.lim_tokens OR h.steps_spent >= h.lim_steps
                     OR h.wall_clock_ms >= h.lim_wall THEN 'budget_exhausted'
                WHEN h.pending_n > 0 OR coalesce(o.n, 0) > 0 THEN 'crashed'
                WHEN h.created_at < now()::TIMESTAMP - INTERVAL {int(stale_after_s)} SECOND
                     THEN 'crashed'
                ELSE 'in_progress'
            END,
            CASE
                WHEN h.meta_status IN ({_KNOWN}) THEN coalesce(
                    (h.metadata->>'status_reason'), 'metadata.status at the head checkpoint')
                WHEN (h.metadata->>'error') IS NOT NULL THEN 'error at the head checkpoint'
                WHEN (h.metadata->'interrupt') IS NOT NULL
                     OR (h.metadata->>'awaiting_approval') = 'true'
                     THEN 'interrupted, waiting for input'
                WHEN h.tokens_spent >= h.lim_tokens THEN 'token limit reached'
                WHEN h.steps_spent >= h.lim_steps THEN 'step limit reached'
                WHEN h.wall_clock_ms >= h.lim_wall THEN 'wall-clock limit reached'
                WHEN h.pending_n > 0 OR coalesce(o.n, 0) > 0
                     THEN 'stopped with ' || greatest(h.pending_n, coalesce(o.n, 0))
                          || ' effect(s) in flight'
                WHEN h.created_at < now()::TIMESTAMP - INTERVAL {int(stale_after_s)} SECOND
                     THEN 'no terminal status and no checkpoint for over '
                          || {int(stale_after_s)} || ' s'
                ELSE 'no terminal status yet'
            END,
            a.first_step, h.step_index, a.n, a.first_at, a.last_at,
            h.tokens_spent, h.steps_spent, h.wall_clock_ms, coalesce(h.limits, '{{}}'::JSON),
            coalesce(v.model_versions, '[]'::JSON), coalesce(s.sv, '[]'::JSON),
            coalesce((h.metadata->>'error'), a.last_error), h.pending_n, h.checkpoint_id,
            (h.metadata->>'replay_of'), TRY_CAST((h.metadata->>'replay_from_step') AS BIGINT)
        FROM h JOIN agg a USING (run_id) JOIN run_keys k USING (run_id)
        LEFT JOIN versions v USING (run_id) LEFT JOIN schemas s USING (run_id)
        LEFT JOIN open_effects o USING (run_id)"""
    )
    row = con.execute("SELECT count(*) FROM _tr").fetchone()
    return int(row[0]) if row else 0
