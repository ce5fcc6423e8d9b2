"""AppTest of the post-incident review: checkpoint content as text, deep links that say what
is missing, triage on the Runs page, the Timeline's evidence, the Replay result's address,
the Migrations and Import fixes, and the app holding no lock between reads."""

from __future__ import annotations

import html
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

from debugger.store import Store
from loaders import import_source
from tests.fixtures.hostile import BEACON_HOST, ERROR, REPLAYED, RUN, STATE_IMAGE
from tests.fixtures.native import native_rows, write_native_sqlite
from tests.ui.conftest import CRASHED, REEXECUTED, REFUND_KEY
from tests.ui.helpers import html_bodies, html_text, in_order, listed_runs, open_app, texts

SOURCES = ("title", "subheader", "markdown", "caption", "error", "warning", "info", "success")


def _markup(at: object) -> list[str]:
    """Every Markdown source the page renders (alerts, captions, headings, text)."""
    return [str(e.value) for kind in SOURCES for e in getattr(at, kind)]


def _assert_text_only(at: object) -> None:
    """No hostile value reaches the browser as Markdown or HTML syntax."""
    for source in _markup(at):
        assert f"]({'http'}://{BEACON_HOST}" not in source, source
        assert ":red[ALERT]" not in source and "<img" not in source, source
    for body in html_bodies(at):  # type: ignore[arg-type]
        tags = _Tags()
        tags.feed(body)
        assert not tags.found, tags.found


APP_LINK = re.compile(r"timeline\?run=[A-Za-z0-9%._~-]*")
"""The one link the app writes into HTML: a run's Timeline, its id quoted (no scheme, no
host, no path of the run's own)."""


class _Tags(HTMLParser):
    """Elements of an HTML body that would load or link anything (there must be none) but
    the app's own links to a run's Timeline (the Runs page's list and Needs attention)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        own = tag == "a" and set(named) <= {"class", "href", "title"}
        if own and APP_LINK.fullmatch(named.get("href") or ""):
            return
        if tag in ("img", "script", "iframe", "a", "link") or any(
            name in ("src", "href", "onerror") for name, _ in attrs
        ):
            self.found.append((tag, attrs))


def test_hostile_content_is_text_on_every_page(review_store: Path) -> None:
    pages = [
        open_app(review_store),
        open_app(review_store, "timeline", run=RUN),
        open_app(review_store, "timeline", run=RUN, step="1"),
        open_app(review_store, "diff", a=f"{RUN}:1", b=f"{RUN}:2"),
        open_app(review_store, "audit", run=RUN),
    ]
    for at in pages:
        assert not at.exception
        _assert_text_only(at)
    timeline = pages[1]
    shown = texts(timeline) + html_text(timeline)
    assert " ".join(ERROR.split()) in shown and STATE_IMAGE in shown  # all of it, as text
    assert RUN in html_text(pages[0])  # the list and Needs attention: HTML, escaped


def test_a_hostile_store_path_is_text_in_the_sidebar(review_store: Path, tmp_path: Path) -> None:
    folder = tmp_path / "<img src=x onerror=alert(1)> **bold** :red[ALERT]"
    folder.mkdir()
    store = folder / "store.duckdb"
    shutil.copyfile(review_store, store)
    at = open_app(store)
    assert not at.exception
    _assert_text_only(at)
    assert str(store) in html_text(at)  # the whole path, as text
    sidebar = [b for b in html_bodies(at) if b.startswith('<p class="store-path">')]
    assert len(sidebar) == 1 and "&lt;img src=x" in sidebar[0]  # escaped, not an element


def test_deep_links_name_what_is_missing(review_store: Path) -> None:
    at = open_app(review_store, "timeline", run=CRASHED, step="42")
    assert "has no step 42 (it has steps 0–6)" in texts(at) and "#### Step" not in texts(at)
    at = open_app(review_store, "timeline", run=CRASHED, checkpoint="nope/c1")
    assert "has no checkpoint 'nope/c1'" in texts(at) and "#### Step" not in texts(at)
    at = open_app(review_store, "timeline", run=CRASHED, step="six")
    assert "Step six is not a step number" in texts(at)
    at = open_app(review_store, "diff", a=f"{CRASHED}:5", b="nope:1")
    assert "names run nope, which is not in this store" in texts(at)
    assert not [b for b in html_bodies(at) if "ss-split" in b]
    at = open_app(review_store, "audit", run="nope")
    assert "No run 'nope' in this store" in texts(at)
    at = open_app(review_store, "replay", replay="nope~replay-9")
    assert "No replay 'nope~replay-9' in this store" in texts(at)


def test_the_diff_url_keeps_the_readable_form(review_store: Path) -> None:
    at = open_app(review_store, "diff", a=f"{CRASHED}:5", b=f"{CRASHED}:6")
    assert at.query_params["a"] == f"{CRASHED}:5" and at.query_params["b"] == f"{CRASHED}:6"
    at = open_app(review_store, "diff", a=f"{REEXECUTED}:8", b=f"{REEXECUTED}:9")
    assert at.query_params["b"] == f"{REEXECUTED}@{REEXECUTED}/c010"  # a fork needs the id


def test_runs_triage_groups_replays_and_lists_audit_errors_first(review_store: Path) -> None:
    at = open_app(review_store)
    assert not at.exception
    rows = listed_runs(at)
    ids = [r["run_id"] for r in rows]
    assert not [i for i in ids if "~replay-" in i]  # replays are not listed as runs...
    crashed = next(r for r in rows if r["run_id"] == REPLAYED)
    assert re.search(r">2</a>$", crashed["Replays"])  # ...but counted under their original
    pills = str(at.get("button_group")[0].proto)
    assert "failed **2**" in pills  # the hostile run and tool-timeout: no replay counted
    page = in_order(at)
    attention = page.split("Needs attention", 1)[1].split("Open a run by its id", 1)[0]
    assert REEXECUTED in attention and "completed, but the audit found at step 9" in attention
    assert "~replay-" not in attention  # Needs attention comes before the list
    # reasons are for people
    assert "metadata.status at the head" not in page
    assert "the last checkpoint (step 7) says failed" in page
    verdicts = {r["run_id"]: r["Audit"] for r in rows}
    assert verdicts[REEXECUTED] == '<span class="runs-error">completed, 2 error(s)</span>'
    assert html.unescape(verdicts[CRASHED]).startswith("resumable")  # no errors: not in red
    at.toggle(key="runs_replays").set_value(True).run()
    assert at.query_params["replays"] == "1"
    assert any("~replay-" in r["run_id"] for r in listed_runs(at))


def test_runs_filters_come_from_the_url(review_store: Path) -> None:
    at = open_app(review_store, status="crashed", q="step")
    assert [r["run_id"] for r in listed_runs(at)] == [CRASHED]
    assert at.session_state["runs_status"] == ["crashed"]


def test_timeline_marks_the_crash_and_the_step_never_checkpointed(review_store: Path) -> None:
    at = open_app(review_store, "timeline", run=CRASHED)
    page = in_order(at)
    assert "Step 7 was attempted and never checkpointed" in page
    slider = at.select_slider(key=f"timeline_pos::{CRASHED}")
    assert "✖ stopped here" in str(slider.proto) and "⚠" in str(slider.proto)
    # pending effects and the audit come before what changed
    assert page.index("effect-outcome-unknown") < page.index("Pending effects")
    assert page.index("Pending effects") < page.index("What changed")
    pending = next(b for b in html_bodies(at) if "Idempotency key" in b)
    assert REFUND_KEY in pending and "<details" in pending  # the args open in full
    links = " ".join(str(p.proto) for p in at.get("page_link"))
    assert f"{CRASHED}:5" in links.replace("%3A", ":")  # the diff with the previous step


def test_timeline_fork_tree_links_open_checkpoints(review_store: Path) -> None:
    at = open_app(review_store, "timeline", run=REEXECUTED)
    page = texts(at)
    assert f"timeline?run={REEXECUTED}&checkpoint={REEXECUTED}%2Fc010" in page


def test_replay_result_has_an_address_and_side_by_side_ledgers(review_store: Path) -> None:
    first, second = f"{REPLAYED}~replay-1", f"{REPLAYED}~replay-2"
    at = open_app(review_store, "replay", replay=first, baseline=second)
    assert not at.exception
    page = texts(at)
    assert "If you replayed a fix, this is expected" in page  # diverged: said plainly
    assert at.warning and not [e for e in at.error if "fix" in str(e.value)]
    assert "Your code and the original code, side by side" in page
    assert "The original code would have sent a **duplicate issue_refund**" in page


def test_migrations_show_free_text_as_text_and_follow_the_run(review_store: Path) -> None:
    module = "sample_checkpoints.refund_desk.migrations"
    at = open_app(review_store, "migrations", session={"migrations_module": module},
                  run="schema-v0-unmigratable")  # fmt: skip
    assert not at.exception
    assert at.code and "Json" not in texts(at)
    at.selectbox(key="migrations_run").set_value(CRASHED).run()
    assert at.selectbox(key=f"migrations_ckpt::{CRASHED}").value == 6


def test_import_names_the_upload_marks_quarantined_runs_and_clears_on_error(
    tmp_path: Path,
) -> None:
    rows = native_rows(runs=2, steps=3)
    rows.append(dict(rows[0], step_index="seven", working_state=json.dumps({"x": 1})))
    source = write_native_sqlite(tmp_path / "bad.sqlite", rows)
    at = open_app(tmp_path / "s.duckdb", "import")
    at.text_input(key="import_path").set_value(str(source)).run()
    at.button(key="import_go").click().run()
    assert "1 rows quarantined in runs run-0 (1)" in texts(at)
    at.text_input(key="import_path").set_value(str(tmp_path / "missing.sqlite")).run()
    at.button(key="import_go").click().run()
    assert len(at.error) == 1 and "rows quarantined" not in texts(at)  # the old report went
    assert "--flavor" not in texts(at) and "--mapping" not in texts(at)


def test_the_app_holds_no_lock_between_reads(review_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    with Store.open(store) as s:
        import_source(s, str(write_native_sqlite(tmp_path / "a.sqlite", native_rows(runs=1))))
    at = open_app(store)
    assert len(listed_runs(at)) == 1
    # a writer opens the store while the app is "open": it is not refused
    more = write_native_sqlite(tmp_path / "b.sqlite", native_rows(runs=3))
    with Store.open(store) as s:
        import_source(s, str(more))
    at.run()
    assert len(listed_runs(at)) == 3  # the new runs, without a restart


def test_a_new_replay_error_clears_the_previous_result(review_store: Path) -> None:
    at = open_app(review_store, "replay", replay=f"{REPLAYED}~replay-1")
    assert "First divergence" in texts(at)
    at.query_params.clear()
    at.session_state["replay_report"] = {"stale": True}
    at.text_input(key="replay_agent").set_value("no_such_module:agent").run()
    next(b for b in at.button if b.label == "Run replay").click().run()
    assert at.error and "First divergence" not in texts(at)
    assert at.session_state["replay_report"] is None and "replay" not in at.query_params


LONG_CHARS = 50_000
"""A metadata value longer than a cell opens in the page (markup.FULL_CHARS)."""


def long_value_store(tmp_path: Path) -> tuple[Path, str]:
    """A store whose run-0 step 1 has a metadata value of :data:`LONG_CHARS` characters,
    ending in a marker; returns the store and the value."""
    rows = native_rows(runs=1, steps=2)
    value = "transcript " * (LONG_CHARS // 11) + "END-OF-TRANSCRIPT"
    meta = json.loads(rows[1]["metadata"])
    rows[1]["metadata"] = json.dumps({**meta, "transcript": value})
    store = tmp_path / "long.duckdb"
    with Store.open(store) as s:
        import_source(s, str(write_native_sqlite(tmp_path / "long.sqlite", rows)))
    return store, value


def test_a_value_too_long_for_the_page_is_a_download(tmp_path: Path) -> None:
    from debugger.pages_data import step_refs, step_view, whole_value
    from debugger.pages_data.markup import FULL_CHARS

    store, value = long_value_store(tmp_path)
    at = open_app(store, "timeline", run="run-0", step="1")
    assert not at.exception
    body = next(b for b in html_bodies(at) if "metadata.transcript" in b)
    total = len(json.dumps(value))
    assert f"The first {FULL_CHARS - 1:,} of {total:,} characters" in body
    assert "END-OF-TRANSCRIPT" not in body  # the page carries the first 20,000 only
    assert len(body) < 3 * FULL_CHARS
    [label] = [html.unescape(b.proto.label) for b in at.get("download_button")
               if "transcript" in html.unescape(b.proto.label)]  # fmt: skip
    assert label == f"Download metadata.transcript (value) in full, {total:,} characters"
    # what the button downloads: the same row built again, uncut
    with Store.open(store, read_only=True) as s:
        view = step_view(s, "run-0", 1)
        i = next(i for i, r in enumerate(view.metadata) if r["key"] == "metadata.transcript")
        assert view.metadata[i]["value_chars"] == total
        whole = whole_value(s, "run-0", view.checkpoint_id, (), "metadata", i, "value",
                            step_refs(s, "run-0"))  # fmt: skip
    assert json.loads(whole) == value
