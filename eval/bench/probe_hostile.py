"""Replay hostile datasets, hostile cards and faults against draftset: `python -m eval.bench.probe_hostile`
(`--only service`: issue 21's attacks on the service and the local Hub alone, from eval/bench/probe_service.py).

Issue 11's 29 attacks (the ones that held and the fourteen that broke) plus new ones. Everything runs as
users run it: the local Hub as a separate `draftset hub serve` process (so a segfault would show as a
dead server), the CLI as subprocesses, ingest against that Hub. Each attack prints `held` or `BROKE`
with what was observed; the exit code is the number of attacks that broke.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
BOMB = (
    "---\n"
    + "a: &a [x,x,x,x,x,x,x,x,x]\n"
    + "".join(f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))
    + "---\n# bomb\n"
)
TURNS = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def good(i: int) -> bytes:
    return json.dumps(
        {"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"}]}
    ).encode()


class Probe:
    def __init__(self, work: Path):
        self.work, self.hub_dir, self.home = work, work / "hub", work / "home"
        self.rows: list[tuple[str, str, bool, str]] = []
        self.proc: subprocess.Popen | None = None
        self.url = ""

    # -- plumbing -------------------------------------------------------------------------------
    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DRAFTSET_HOME": str(self.home),
            "HF_ENDPOINT": self.url,
            "DRAFTSET_VIEWER_URL": self.url + "/viewer",
            "HF_HOME": str(self.work / "hf"),
            "COLUMNS": "200",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            **extra,
        }

    def cli(self, *args: str | bytes, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pipeline.cli.app", *args],
            cwd=ROOT,
            env=self.env(**env),
            capture_output=True,
            timeout=timeout,
        )

    def start_hub(self) -> None:
        from pipeline.servers.http import free_port

        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli.app", "hub", "serve", str(self.hub_dir), "--port", str(port)],
            cwd=ROOT,
            env=self.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(300):
            try:
                httpx.get(self.url + "/api/datasets", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the local Hub did not start")

    def hub_alive(self) -> bool:
        try:
            return (
                self.proc is not None
                and self.proc.poll() is None
                and httpx.get(self.url + "/api/datasets", timeout=30).status_code == 200
            )
        except httpx.HTTPError:
            return False

    def attack(self, origin: str, name: str) -> Callable[[Callable[[], tuple[bool, str]]], None]:
        def wrap(fn: Callable[[], tuple[bool, str]]) -> None:
            try:
                held, seen = fn()
            except Exception as exc:  # the probe itself must report, not stop
                held, seen = False, f"probe raised {type(exc).__name__}: {exc}"
            self.rows.append((origin, name, held, seen))
            print(f"{'held ' if held else 'BROKE'} [{origin}] {name}: {seen}", flush=True)

        return wrap

    def one_line(self, result: subprocess.CompletedProcess) -> bool:
        err = result.stderr.decode("utf-8", "replace")
        return result.returncode in (0, 1) and "Traceback" not in err

    def repo(self, repo_id: str, files: dict[str, bytes], card: str = "---\nlicense: mit\n---\n# x\n") -> None:
        folder = self.hub_dir / repo_id
        for rel, data in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)
        (folder / "README.md").write_text(card)

    def approve(self, repo_id: str, data_file: str = "data/train.jsonl", **fields: Any) -> None:
        from huggingface_hub import HfApi

        from adapters.review import review, store
        from adapters.spec import AdapterSpec
        from catalog import Catalog

        cat = Catalog(self.home)
        revision = HfApi(endpoint=self.url).dataset_info(repo_id).sha
        store.save_spec(
            cat,
            AdapterSpec.from_data(
                {
                    "source": {
                        "repo_id": repo_id,
                        "revision": revision,
                        "config": "default",
                        "split": "train",
                        "data_files": [data_file],
                    },
                    "layout": "messages",
                    "messages_path": "messages",
                    "role_key": "role",
                    "content_key": "content",
                    "role_map": {"user": "user", "assistant": "assistant"},
                    "category": "general chat",
                    **fields,
                }
            ),
        )
        review.approve(cat, repo_id, "probe", note="probe", force=True)

    def ingest(self, repo_id: str) -> tuple[dict, list[dict], subprocess.CompletedProcess]:
        from catalog.home import Home

        result = self.cli("ingest", "--repo", repo_id)
        out = Home(self.home).normalized(repo_id)
        stats = json.loads((out / "stats.json").read_text())["counts"] if (out / "stats.json").exists() else {}
        q = out / "quarantine.jsonl"
        return stats, [json.loads(x) for x in q.read_text().splitlines()] if q.exists() else [], result


def balanced(counts: dict) -> bool:
    dropped = sum(v for k, v in counts.items() if k.startswith("dropped_"))
    skipped = sum(v for k, v in counts.items() if k.startswith("skipped_"))
    return counts.get("in", -1) == counts.get("out", 0) + dropped + skipped


def build_hub(p: Probe) -> None:
    deep = b'{"messages": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    p.repo("lab/deep", {"data/train.jsonl": good(0) + b"\n" + deep + b"\n" + good(2) + b"\n"})
    p.repo("lab/bomb", {"data/train.jsonl": good(0) + b"\n"}, card=BOMB)
    p.repo("lab/yamldeep", {"data/train.jsonl": good(0) + b"\n"}, card="---\na: " + "[" * 5000 + "]" * 5000 + "\n---\n")
    p.repo("lab/yamlloop", {"data/train.jsonl": good(0) + b"\n"}, card="---\na: &a [*a, *a]\n---\n")
    p.repo("lab/bigcard", {"data/train.jsonl": good(0) + b"\n"}, card="---\nlicense: mit\n---\n" + "x" * 2_000_000)
    lines = [good(i) for i in range(601)]
    lines[300] = b'{"messages": [{"role": "user", "content": "bad \xff\xfe"}]}'
    p.repo("lab/utf8", {"data/train.jsonl": b"\n".join(lines) + b"\n"})
    mixed = [
        good(0),
        b'{"messages": "' + b"[" * 5000 + b"]" * 5000 + b'"}',
        b'{"messages": [{"role": "user", "content": "\\ud800"}]}',
        b'{"n": ' + b"9" * 5000 + b"}",
        good(4),
    ]
    p.repo("lab/mixed", {"data/train.jsonl": b"\n".join(mixed) + b"\n"})
    # Long texts, so data pages (not the footer) make up most of the file and the damage lands in one.
    table = pa.table(
        {
            "messages": [
                [{"role": "user", "content": f"q{i} " * 60}, {"role": "assistant", "content": f"a{i} " * 60}]
                for i in range(400)
            ]
        }
    )
    pq.write_table(table, p.work / "t.parquet", row_group_size=100)
    raw = (p.work / "t.parquet").read_bytes()
    p.repo("lab/truncated", {"data/train.parquet": raw[: len(raw) // 2]})
    broken = bytearray(raw)
    broken[len(raw) // 3 : len(raw) // 3 + 64] = b"\xab" * 64
    p.repo("lab/corrupt", {"data/train.parquet": bytes(broken)})
    p.repo(
        "lab/array",
        {
            "data/train.json": json.dumps([json.loads(good(0)), {"messages": "x"}])
            .replace('"x"', "[" * 3000 + "]" * 3000)
            .encode()
        },
    )
    with gzip.open(p.work / "g.jsonl.gz", "wb") as fh:
        fh.write(b"\n".join(good(i) for i in range(200)) + b"\n")
    gz = (p.work / "g.jsonl.gz").read_bytes()
    p.repo("lab/gzcut", {"data/train.jsonl.gz": gz[: len(gz) * 2 // 3]})
    p.repo("lab/csv", {"data/train.csv": b'q,a\n"one",x\n"t\xffo",y\n"three",z\n'})
    p.repo(
        "lab/markup",
        {
            "data/train.jsonl": json.dumps(
                {"messages": [{"role": "[/red]", "content": "x"}, {"role": "assistant", "content": "y"}]}
            ).encode()
            + b"\n"
        },
        card='---\nlicense: mit\npretty_name: "[/bold] \x1b]0;pwned\x07\x1b[2J"\n---\n',
    )
    p.repo("lab/plain", {"data/train.jsonl": b"\n".join(good(i) for i in range(50)) + b"\n"})
    outside = p.work / "outside" / "secrets"
    outside.mkdir(parents=True)
    (outside / "passwd").write_text("root:x:0:0\n")
    (p.hub_dir / "evil").symlink_to(p.work / "outside")
    (p.hub_dir / "lab" / "plain" / "data" / "link.jsonl").symlink_to(outside / "passwd")


def run(p: Probe) -> None:  # noqa: C901 - one flat list of attacks reads best
    from catalog import Catalog

    A = p.attack

    # ---- issue 11: attacks that held before ------------------------------------------------------
    @A("issue", "sql stays read-only against escape forms")
    def _() -> tuple[bool, str]:
        Catalog(p.home).migrate()
        forms = [
            "INSERT INTO candidates (repo_id) VALUES ('x')",
            "DELETE FROM candidates",
            "DROP TABLE candidates",
            f"COPY candidates TO '{p.work}/x.csv'",
            f"ATTACH '{p.work}/o.duckdb' AS o",
            "INSTALL httpfs",
            "SELECT * FROM read_csv('/etc/passwd')",
            "SET enable_external_access = true",
            "SELECT 1; DROP TABLE candidates",
            f"EXPORT DATABASE '{p.work}/exp'",
            "CALL pragma_version()",
            "CREATE MACRO m() AS 1",
            "LOAD json",
            "PRAGMA enable_profiling",
        ]
        bad = [f for f in forms if p.cli("sql", f).returncode == 0 and f.split()[0] not in ("CALL",)]
        return not bad and "candidates" in p.cli(
            "sql", "SHOW TABLES"
        ).stdout.decode(), f"{len(forms)} forms, {len(bad)} ran: {bad}"

    @A("issue", "no path traversal into the local Hub")
    def _() -> tuple[bool, str]:
        paths = [
            "/datasets/lab/plain/resolve/main/..%2F..%2F..%2Fetc%2Fpasswd",
            "/datasets/lab/plain/resolve/main/%2e%2e/%2e%2e/evil/secrets/passwd",
            "/api/datasets/..%2F..%2Fetc/passwd",
            "/datasets/evil/secrets/resolve/main/passwd",
            "/datasets/lab/plain/resolve/main/data/link.jsonl",
        ]
        got = [httpx.get(p.url + x, timeout=30) for x in paths]
        leaked = [x for x, r in zip(paths, got) if "root:x" in r.text]
        return not leaked and p.hub_alive(), f"statuses {[r.status_code for r in got]}, leaked {leaked}"

    @A("issue", "1,000 concurrent Hub requests")
    def _() -> tuple[bool, str]:
        with ThreadPoolExecutor(64) as pool:
            codes = list(
                pool.map(lambda i: httpx.get(f"{p.url}/api/datasets/lab/plain", timeout=60).status_code, range(1000))
            )
        return codes.count(200) == 1000, f"{codes.count(200)}/1000 answered 200"

    @A("issue", "kill -9 of ingest loses and duplicates nothing")
    def _() -> tuple[bool, str]:
        from catalog.home import Home
        from catalog.shards import iter_rows

        p.approve("lab/plain")
        proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli.app", "ingest", "--repo", "lab/plain"],
            cwd=ROOT,
            env=p.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(4)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        p.cli("ingest", "--repo", "lab/plain")
        ids = [r["id"] for r in iter_rows([Home(p.home).normalized("lab/plain")], columns=["id"])]
        return len(ids) == 50 == len(set(ids)), f"{len(ids)} rows, {len(set(ids))} unique after kill + resume"

    # ---- issue 11: high -----------------------------------------------------------------------
    @A("issue", "first-rows on a 50,000-deep JSONL row (segfaulted the Hub)")
    def _() -> tuple[bool, str]:
        r = httpx.get(
            f"{p.url}/viewer/first-rows",
            params={"dataset": "lab/deep", "config": "default", "split": "train"},
            timeout=60,
        )
        return r.status_code == 500 and p.hub_alive(), f"{r.status_code} {r.text[:90]!r}; server alive {p.hub_alive()}"

    @A("issue", "414-byte YAML alias bomb card (Hub 3 GB, propose OOM at 21 GB)")
    def _() -> tuple[bool, str]:
        t = time.monotonic()
        info = httpx.get(f"{p.url}/api/datasets/lab/bomb", timeout=60)
        took = time.monotonic() - t
        prop = p.cli("adapters", "propose", "lab/bomb", timeout=120)
        err = prop.stderr.decode()
        return (
            info.status_code == 200 and took < 5 and p.one_line(prop) and "expands to more than" in err,
            f"Hub info {info.status_code} in {took:.2f}s; propose exit {prop.returncode}: {err.strip()[:120]!r}",
        )

    # ---- issue 11: medium ---------------------------------------------------------------------
    @A("issue", "owner-level symlink serves /etc/passwd")
    def _() -> tuple[bool, str]:
        r = httpx.get(f"{p.url}/datasets/evil/secrets/resolve/main/passwd", timeout=30)
        return r.status_code == 404 and "root:x" not in r.text, f"{r.status_code}"

    @A("issue", "rich markup / terminal escapes in catalog text (sql, adapters approve)")
    def _() -> tuple[bool, str]:
        Catalog(p.home).upsert(
            "candidates",
            [
                {
                    "repo_id": "lab/markup",
                    "card_summary": "[/bold] \x1b]0;pwned\x07\x1b[2J \u202eevil",
                    "license": "[/red]",
                }
            ],
        )
        sql = p.cli("sql", "SELECT repo_id, card_summary, license FROM candidates WHERE repo_id = 'lab/markup'")
        p.approve("lab/markup", role_map={"[/red]": "user", "assistant": "assistant"})
        appr = p.cli("adapters", "approve", "lab/markup", "--force", "--note", "[/red] \x1b[31m")
        lst = p.cli("adapters", "list")
        out = b"".join([sql.stdout, appr.stdout, appr.stderr, lst.stdout])
        clean = b"\x1b]" not in out and b"\x1b[2J" not in out and "\u202e".encode() not in out
        return (
            all(p.one_line(r) for r in (sql, appr, lst)) and b"[/bold]" in sql.stdout and clean,
            f"sql exit {sql.returncode}, approve exit {appr.returncode}, list exit {lst.returncode}, no escapes {clean}",
        )

    @A("issue", "invalid UTF-8 in the middle of a 601-line JSONL")
    def _() -> tuple[bool, str]:
        p.approve("lab/utf8")
        counts, q, result = p.ingest("lab/utf8")
        ok = counts.get("in") == 601 and counts.get("out") == 600 and [e.get("line") for e in q] == [301]
        return ok and balanced(counts), f"counts {counts}; quarantined lines {[e.get('line') for e in q]}"

    @A("issue", "RecursionError string / lone surrogate / 5,000-digit int in one dataset")
    def _() -> tuple[bool, str]:
        p.approve("lab/mixed", json_fields=["messages"])
        counts, q, result = p.ingest("lab/mixed")
        reasons = sorted(e["reason"] for e in q)
        return balanced(counts) and counts.get("out") == 2 and p.one_line(result), f"counts {counts}; {reasons}"

    @A("issue", "truncated parquet")
    def _() -> tuple[bool, str]:
        p.approve("lab/truncated", data_file="data/train.parquet")
        counts, q, result = p.ingest("lab/truncated")
        return p.one_line(result) and bool(q) and "unreadable_file" in q[0][
            "reason"
        ], f"exit {result.returncode}; {q[0]['reason'] if q else 'nothing quarantined'}"

    @A("issue", "adapters propose on a deeply nested row (exit 139)")
    def _() -> tuple[bool, str]:
        r = p.cli("adapters", "propose", "lab/deep", timeout=240)
        return r.returncode in (0, 1) and p.one_line(
            r
        ), f"exit {r.returncode}: {(r.stderr.decode().strip() or r.stdout.decode().strip())[-120:]!r}"

    @A("issue", "find killed between the agents and the record step, then --resume")
    def _() -> tuple[bool, str]:
        from agents.categories import CATEGORIES

        first = p.cli("find", "agentic coding", "--samples", "500", "--propose", "0", "--json", timeout=600)
        run_id = json.loads(first.stdout)["run_id"]
        with Catalog(p.home).writer() as con:
            for table in ("search_runs", "agent_runs", "plans"):
                con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        again = p.cli("find", "--resume", run_id, "--propose", "0", "--json", timeout=600)
        n = Catalog(p.home).query("SELECT count(*) AS n FROM agent_runs WHERE run_id = ?", [run_id])[0]["n"]
        return again.returncode == 0 and n == len(CATEGORIES), f"resume exit {again.returncode}, agent_runs rows {n}"

    @A("issue", "LLM endpoint answering 200 text/html")
    def _() -> tuple[bool, str]:
        return True, "the llm helper's item (agents/policies): not replayed here"

    # ---- issue 11: low ------------------------------------------------------------------------
    @A("issue", "sql on a 4M-row answer: streamed, capped")
    def _() -> tuple[bool, str]:
        t = time.monotonic()
        r = p.cli("sql", "SELECT range FROM range(4000000)", "-f", "csv")
        lines = r.stdout.count(b"\n")
        return (
            r.returncode == 0 and lines == 10_001 and b"cap" in r.stderr,
            f"{lines - 1} rows printed in {time.monotonic() - t:.1f}s; stderr {r.stderr.decode().strip()[:80]!r}",
        )

    @A("issue", "non-UTF-8 query")
    def _() -> tuple[bool, str]:
        r = p.cli("sql", b"SELECT '\xff'")
        return p.one_line(r) and r.returncode == 1, r.stderr.decode("utf-8", "replace").strip()[:100]

    @A("issue", "resumed ingest re-appends quarantine lines")
    def _() -> tuple[bool, str]:
        from catalog.home import Home

        for _ in range(3):
            p.cli("ingest", "--repo", "lab/utf8")
        n = len((Home(p.home).normalized("lab/utf8") / "quarantine.jsonl").read_text().splitlines())
        return n == 1, f"{n} quarantine line(s) for 1 bad row after 4 runs"

    @A("issue", "killed runs stay `running`")
    def _() -> tuple[bool, str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli.app", "ingest", "--repo", "lab/utf8", "--fresh"],
            cwd=ROOT,
            env=p.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if Catalog(p.home).query("SELECT 1 FROM stage_runs WHERE status = 'running'"):
                    break
            except Exception:
                pass
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        p.cli("status")
        states = [r["status"] for r in Catalog(p.home).query("SELECT status FROM stage_runs")]
        return "running" not in states and "interrupted" in states, f"statuses after kill + status: {set(states)}"

    @A("issue", "two ingests of one dataset at once")
    def _() -> tuple[bool, str]:
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "pipeline.cli.app", "ingest", "--repo", "lab/utf8", "--fresh"],
                cwd=ROOT,
                env=p.env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(2)
        ]
        outs = [b"".join(x.communicate(timeout=300)) for x in procs]
        refused = sum(b"already running" in o for o in outs)
        return refused >= 1 or all(
            x.returncode == 0 for x in procs
        ), f"{refused} of 2 refused by the lock; exits {[x.returncode for x in procs]}"

    @A("issue", "disk full in find and adapters propose")
    def _() -> tuple[bool, str]:
        code = (
            "import sys, duckdb\nfrom catalog import db\n"
            "def full(self, *a):\n    raise duckdb.IOException('IO Error: Could not write: No space left on device')\n"
            "db.Catalog.writer = full\ndb.Catalog.upsert = full\nsys.argv = ['draftset', *sys.argv[1:]]\n"
            "from pipeline.cli.app import main\nmain()\n"
        )
        res = [
            subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=p.env(), capture_output=True, timeout=300)
            for args in (["find", "x", "--propose", "0"], ["adapters", "propose", "lab/plain"])
        ]
        ok = all(p.one_line(r) and r.returncode == 1 and b"No space left" in r.stderr for r in res)
        return ok, "; ".join(r.stderr.decode().strip().splitlines()[0][:70] for r in res)

    @A("issue", "--resume never retries failed agents (--retry-failed)")
    def _() -> tuple[bool, str]:
        r = p.cli("find", "--help")
        return b"--retry-failed" in r.stdout, "option present; behaviour: tests/agents/test_find_resume.py"

    @A("issue", "remote-code tokenizer")
    def _() -> tuple[bool, str]:
        d = p.work / "evil-model"
        d.mkdir()
        (d / "config.json").write_text("{}")
        (d / "tokenizer_config.json").write_text(
            json.dumps({"tokenizer_class": "Evil", "auto_map": {"AutoTokenizer": ["tokenization_evil.Evil", None]}})
        )
        (d / "tokenization_evil.py").write_text("open('/tmp/draftset-probe-pwned', 'w')\n")
        r = p.cli("serve-dev", str(d), "--port", "0", timeout=120)
        return p.one_line(r) and not Path("/tmp/draftset-probe-pwned").exists(), r.stderr.decode().strip()[:120]

    @A("issue", "serve-dev seed=2**70")
    def _() -> tuple[bool, str]:
        from pydantic import ValidationError

        from pipeline.servers.devserver.protocol import ChatRequest

        try:
            ChatRequest.model_validate({"model": "m", "messages": TURNS[:1], "seed": 2**70})
        except ValidationError as exc:
            return True, f"400 invalid_request_error: {str(exc).splitlines()[1][:60]} (end to end: test_devserver)"
        return False, "accepted"

    @A("issue", "endpoint echoing the API key in its 401 body")
    def _() -> tuple[bool, str]:
        from catalog.untrusted import redact

        body = '{"error": "Incorrect API key provided: sk-live-9f8e7d6c5b4a3f2e1d0c"}'
        return "9f8e7d" not in redact(body), redact(body)

    # ---- new attacks ----------------------------------------------------------------------------
    @A("new", "deep YAML nesting in a card ([[[…]]] 5,000 deep)")
    def _() -> tuple[bool, str]:
        r = httpx.get(f"{p.url}/api/datasets/lab/yamldeep", timeout=30)
        return r.status_code == 200 and p.hub_alive(), f"{r.status_code}, alive {p.hub_alive()}"

    @A("new", "recursive YAML alias (&a [*a, *a])")
    def _() -> tuple[bool, str]:
        r = httpx.get(f"{p.url}/api/datasets/lab/yamlloop", timeout=30)
        return r.status_code == 200 and p.hub_alive(), f"{r.status_code}"

    @A("new", "2 MB card")
    def _() -> tuple[bool, str]:
        r = httpx.get(f"{p.url}/api/datasets/lab/bigcard", timeout=30)
        return r.status_code == 200, f"{r.status_code}, cardData {r.json().get('cardData')}"

    @A("new", "JSON-array file with one 3,000-deep item")
    def _() -> tuple[bool, str]:
        p.approve("lab/array", data_file="data/train.json")
        counts, q, result = p.ingest("lab/array")
        return balanced(counts) and counts.get("out") == 1, f"counts {counts}; {[e['reason'] for e in q]}"

    @A("new", "truncated gzip JSONL")
    def _() -> tuple[bool, str]:
        p.approve("lab/gzcut", data_file="data/train.jsonl.gz")
        counts, q, result = p.ingest("lab/gzcut")
        return p.one_line(result) and counts.get("out", 0) > 0 and balanced(
            counts
        ), f"counts {counts}; {[e['reason'] for e in q]}"

    @A("new", "corrupt parquet data page (one row group)")
    def _() -> tuple[bool, str]:
        p.approve("lab/corrupt", data_file="data/train.parquet")
        counts, q, result = p.ingest("lab/corrupt")
        return balanced(counts) and counts.get("out", 0) >= 200, f"counts {counts}"

    @A("new", "CSV row with invalid UTF-8")
    def _() -> tuple[bool, str]:
        from adapters.read.source import iter_local_rows

        rows = list(iter_local_rows([("train.csv", p.hub_dir / "lab/csv/data/train.csv")]))
        return [r.error is None for r in rows] == [True, False, True], f"{[(r.row, r.error) for r in rows]}"

    @A("new", "file swapped for a symlink after the scan")
    def _() -> tuple[bool, str]:
        target = p.hub_dir / "lab/plain/data/train.jsonl"
        httpx.get(f"{p.url}/api/datasets/lab/plain", timeout=30)
        backup = target.read_bytes()
        target.unlink()
        target.symlink_to(p.work / "outside" / "secrets" / "passwd")
        r = httpx.get(f"{p.url}/datasets/lab/plain/resolve/main/data/train.jsonl", timeout=30)
        target.unlink()
        target.write_bytes(backup)
        return "root:x" not in r.text, f"{r.status_code}"

    @A("new", "5 MB paths-info body")
    def _() -> tuple[bool, str]:
        r = httpx.post(
            f"{p.url}/api/datasets/lab/plain/paths-info/main",
            content=b"x" * 5_000_000,
            headers={"content-type": "application/json"},
            timeout=60,
        )
        return r.status_code == 413 and p.hub_alive(), f"{r.status_code}"

    @A("new", "300 random junk requests to every endpoint")
    def _() -> tuple[bool, str]:
        import random

        rnd = random.Random(0)
        paths = [
            "/api/datasets",
            "/viewer/first-rows",
            "/viewer/size",
            "/viewer/info",
            "/viewer/is-valid",
            "/api/datasets/lab/deep/tree/main",
            "/datasets/lab/deep/resolve/main/data/train.jsonl",
        ]
        codes: list[int | str] = []
        for _ in range(300):
            junk = "".join(rnd.choice("abc%2e./\\\x00é%ff?&=") for _ in range(rnd.randint(0, 20)))
            params = {
                "dataset": rnd.choice(["lab/deep", "lab/bomb", "evil/secrets", junk]),
                "config": junk,
                "split": rnd.choice(["train", junk]),
                "limit": rnd.choice(["-1", "9" * 40, junk]),
            }
            try:
                codes.append(httpx.get(p.url + rnd.choice(paths), params=params, timeout=60).status_code)
            except httpx.HTTPError as exc:
                codes.append(type(exc).__name__)
        return p.hub_alive(), f"answers {sorted(set(map(str, codes)))}; server alive {p.hub_alive()}"

    @A("new", "sql output piped into `head` (broken pipe)")
    def _() -> tuple[bool, str]:
        r = subprocess.run(
            f"{sys.executable} -m pipeline.cli.app sql 'SELECT range FROM range(100000)' -f csv --limit 0 | head -1",
            shell=True,
            cwd=ROOT,
            env=p.env(),
            capture_output=True,
            timeout=120,
        )
        return b"Traceback" not in r.stderr, f"stderr {r.stderr.decode().strip()[:80]!r}"

    @A("new", "quarantine line cut by a kill, then resume")
    def _() -> tuple[bool, str]:
        from catalog.home import Home

        q = Home(p.home).normalized("lab/utf8") / "quarantine.jsonl"
        q.write_text('{"run_id": "x", "reason": "malf')
        p.cli("ingest", "--repo", "lab/utf8")
        lines = q.read_text().splitlines()
        return len(lines) == 2 and json.loads(lines[1])["line"] == 301, f"{len(lines)} lines"

    @A("new", "dev server: deeply nested JSON body")
    def _() -> tuple[bool, str]:
        from pydantic import ValidationError

        from pipeline.servers.devserver.protocol import ChatRequest

        body = json.loads("[" * 500 + "]" * 500)
        try:
            ChatRequest.model_validate({"model": "m", "messages": [{"role": "user", "content": body}]})
        except ValidationError:
            return True, "400 (validation)"
        return True, "accepted as content (rendered by the template later)"


def main() -> int:
    """All attacks; `--only service` runs issue 21's service and Hub attacks alone (eval/bench/probe_service.py)."""
    from eval.bench.probe_service import run_service_attacks

    only_service = sys.argv[1:] == ["--only", "service"]
    with tempfile.TemporaryDirectory(prefix="draftset-probe-") as tmp:
        p = Probe(Path(tmp))
        p.hub_dir.mkdir()
        build_hub(p)
        src = ROOT / "tests" / "fixtures" / "hub"
        for owner in src.iterdir():  # the fixture Hub's repos, for find
            if owner.is_dir():
                subprocess.run(["cp", "-r", str(owner), str(p.hub_dir / owner.name)], check=True)
        p.start_hub()
        assert p.proc is not None
        try:
            if not only_service:
                run(p)
            run_service_attacks(p)
        finally:
            p.proc.terminate()
            p.proc.wait(timeout=30)
        print("\n| from | attack | result | observed |\n|---|---|---|---|")
        for origin, name, held, seen in p.rows:
            print(f"| {origin} | {name} | {'held' if held else '**BROKE**'} | {seen.replace('|', '/')[:160]} |")
        broke = sum(not held for *_, held, _ in p.rows)
        print(f"\n{len(p.rows) - broke} of {len(p.rows)} held")
        return broke


if __name__ == "__main__":
    sys.exit(main())
