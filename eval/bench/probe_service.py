"""Issue 21's attacks on the service and the local Hub, run by `python -m eval.bench.probe_hostile`
(or alone: `python -m eval.bench.probe_hostile --only service`).

Everything runs as users run it: `draftset serve` and `draftset hub serve` as separate processes, the CLI
as subprocesses, real HTTP. Each attack prints held/BROKE with what was seen; the headline figure is a
normal user's read latency (p50/p99) while four viewers run the slowest SQL they can write, against the
same reads with nobody else on the service (the baseline, same run).

Issue 34's two SQL attacks (rerun 2026-12-02, 2 shared cores, `--only service`: 12 of 13 held): one
expensive function call (repeat / string_agg / list_sum over range) is 413 in 0.1-0.4 s with the service's
RSS +0 MB and a reviewer's next reject answered (404, the repo being absent); on the tree before the capped
SQL child those calls left the service answering "Current transaction is aborted". A fifth user behind four
viewers looping the slowest SQL: 5/5 answered, each waiting at most the one running statement (3.1 s at a
3 s limit); on main, the same scenario in tests/pipeline/servers/service/test_sql_console_limits.py
(1 s limit) answered 200, 200, 503, 503. The one BROKE of that run, "decompression bombs ... through the CLI
(adapters test)" (json-gz and csv-gz bombs read without a refusal word, 154 MB, 6-7 s), was the attack's own
verdict, not a hole: `adapters test` reads a sample of rows from a stream and stops, so a 500 MB file behind 1 MB
of gzip costs what its sample costs. Refusing it by its decoded size would refuse every large real dataset (a
refused valid dataset is samples lost); the bound that matters is time and memory, which the attack checks, and a
refusal is required only where a file cannot be read within them (the parquet dictionary bomb). Rerun with that
verdict (2026-12-02, merged tree): 13 of 13 held; jsonl-gz refused in 4.6 s, json-gz and csv-gz sampled in 2.6 and
4.6 s, the parquet dictionary bomb refused in 2.8 s, the CLI at 154-216 MB throughout.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import stat
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
# The slowest statements a viewer can write in one line: a huge scan, and a hash join that explodes.
SLOW = [
    "SELECT sum(i * i % 7) FROM range(100000000000000) t(i)",
    "SELECT count(*) FROM range(100000) a JOIN range(100000) b ON a.range % 3 = b.range % 3",
]
HOSTILE_LABELS = ["$(touch PWNED)", "`touch PWNED`", "x'; touch PWNED; '", "nul\x00;touch PWNED", "\x1b[31mred"]


class Service:
    """`draftset serve` on the probe's home, in its own process."""

    def __init__(self, probe: Any, **env: str):
        from catalog import Catalog
        from pipeline.servers.http import free_port
        from pipeline.servers.service.users import add_user

        self.probe = probe
        cat = Catalog(probe.home)
        self.tokens = {name: add_user(cat, name, role) for name, role in _USERS}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli.app", "serve", "--port", str(self.port)],
            cwd=ROOT,
            env=probe.env(**env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(600):
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the service did not start")

    def client(self, name: str | None, timeout: float = 30) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[name]}"} if name else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> float:
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return time.monotonic() - t0


_USERS = [("norm", "reviewer"), ("olga", "operator")] + [(f"v{i}", "viewer") for i in range(4)]


def _reads(svc: Service, seconds: float) -> list[float]:
    """A normal user's reads (candidates, plan, adapters, me), latency of each in ms."""
    took: list[float] = []
    paths = ["/api/candidates?limit=50", "/api/adapters", "/api/me", "/health"]
    deadline = time.monotonic() + seconds
    with svc.client("norm") as c:
        i = 0
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            c.get(paths[i % len(paths)])
            took.append((time.perf_counter() - t0) * 1000)
            i += 1
            time.sleep(0.02)
    return took


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _attackers(svc: Service, stop: threading.Event, codes: list[int]) -> list[threading.Thread]:
    def loop(name: str, query: str) -> None:
        with svc.client(name, timeout=60) as c:
            while not stop.is_set():
                try:
                    codes.append(c.post("/api/sql", json={"query": query}).status_code)
                except httpx.HTTPError:
                    codes.append(-1)

    threads = [threading.Thread(target=loop, args=(f"v{i}", SLOW[i % 2]), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    return threads


def _bomb_files(p: Any) -> dict[str, str]:
    """One decompression bomb per accepted file type, each in its own repo: repo -> data file."""
    made = {}
    row = {"messages": [{"role": "user", "content": "a" * 2000}, {"role": "assistant", "content": "b" * 2000}]}
    n = 120_000  # ~500 MB decoded, ~1 MB gzipped
    for fmt, name in (("jsonl", "train.jsonl.gz"), ("json", "train.json.gz"), ("csv", "train.csv.gz")):
        if fmt == "jsonl":
            text = (json.dumps(row) + "\n") * n
        elif fmt == "json":
            text = "[" + ",".join([json.dumps(row)] * n) + "]"
        else:
            text = "prompt,answer\n" + ("a" * 2000 + "," + "b" * 2000 + "\n") * n
        p.repo(f"bomb/{fmt}-gz", {f"data/{name}": gzip.compress(text.encode(), 9)})
        made[f"bomb/{fmt}-gz"] = f"data/{name}"
    column = pa.DictionaryArray.from_arrays(pa.array([0] * 1000, pa.int32()), pa.array(["x" * 10_000_000]))
    folder = p.hub_dir / "bomb" / "parquet-dict" / "data"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"text": column}), folder / "train.parquet", compression="zstd")
    (folder.parent / "README.md").write_text("---\nlicense: mit\n---\n# bomb\n")
    made["bomb/parquet-dict"] = "data/train.parquet"
    return made


def _run_hint(line: str, work: Path) -> tuple[bool, str]:
    """Paste a suggested command into bash with `draftset` a recorder: did anything else run?"""
    bin_dir = work / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    rec = bin_dir / "draftset"
    rec.write_text('#!/bin/sh\necho called >> "$RECORD"\n')
    rec.chmod(rec.stat().st_mode | stat.S_IEXEC)
    record = work / "record"
    record.write_text("")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "RECORD": str(record), "HOME": str(work)}
    done = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True, timeout=30)
    ran_other = (work / "PWNED").exists() or bool(done.stderr.strip())
    return (not ran_other and record.read_text().count("called") >= 1), done.stderr.strip()[:80]


def run_service_attacks(p: Any) -> None:  # noqa: C901 - one flat list of attacks reads best
    from catalog import Catalog

    A = p.attack
    Catalog(p.home).migrate()
    bombs = _bomb_files(p)
    for repo, data_file in bombs.items():  # the bomb goes off while rows are read, before any mapping
        p.approve(repo, data_file=data_file)

    # ---- CLI paths over the bombs (the service is not running: the CLI owns the catalog) ------------
    @A("new", "decompression bombs of every file type through the CLI (adapters test)")
    def _() -> tuple[bool, str]:
        seen = []
        ok = True
        for repo in bombs:
            t0 = time.monotonic()
            r = subprocess.run(
                [sys.executable, "-c", _MEASURED, sys.executable, "-m", "pipeline.cli.app", "adapters", "test", repo],
                cwd=ROOT,
                env=p.env(),
                capture_output=True,
                timeout=300,
            )
            err = (r.stdout + r.stderr).decode("utf-8", "replace")
            rss = float(err.strip().splitlines()[-1].split()[-1])
            refused = "file_over_limit" in err or "refused:" in err
            # Held: no traceback, inside the time and memory bounds, and either refused or answered (a sample read
            # from a stream and stopped is the right answer for a large file; the verdict line says which).
            answered = refused or r.returncode in (0, 1) and ("pass" in err or "FAIL" in err)
            ok &= "Traceback" not in err and answered and time.monotonic() - t0 < 120 and rss < 500
            seen.append(
                f"{repo}: {'refused' if refused else 'READ'} in {time.monotonic() - t0:.1f} s, CLI {rss:.0f} MB"
            )
        return ok, "; ".join(seen)

    @A("new", "untrusted role labels in hints: every suggested command pasted into a shell")
    def _() -> tuple[bool, str]:
        rows = [
            json.dumps({"messages": [{"role": label, "content": "hi"}, {"role": "assistant", "content": "ok"}]})
            for label in HOSTILE_LABELS
        ]
        p.repo("lab/labels", {"data/train.jsonl": ("\n".join(rows) + "\n").encode()})
        p.approve("lab/labels", role_map={"assistant": "assistant"})
        p.cli("adapters", "test", "lab/labels", timeout=300)
        from adapters.review import store
        from catalog.untrusted import label_word, suggested_commands

        record = store.load(Catalog(p.home), "lab/labels")
        assert record is not None and record.contract is not None
        # every check's detail, as the CLI and the pages show them (the CLI's tables cut long cells)
        text = " ".join(c["detail"] for c in record.contract["checks"])
        lines = [line for line in suggested_commands(text) if " map " in line]
        results = [_run_hint(line, p.work / f"hint{i}") for i, line in enumerate(lines)]
        shown = sum(label_word(label) in text for label in HOSTILE_LABELS[:3])
        held = bool(lines) and all(ok for ok, _ in results) and not (p.work / "PWNED").exists()
        return (
            held,
            f"{len(lines)} suggested map commands, draftset alone ran: {held}; labels shown as mapped: {shown}/3",
        )

    # ---- the service ---------------------------------------------------------------------------------
    svc = Service(p, DRAFTSET_SQL_TIMEOUT_S="3")
    try:

        @A("new", "normal user's reads while 4 viewers run the slowest SQL they can write (p99 < 200 ms)")
        def _() -> tuple[bool, str]:
            alone = _reads(svc, 8)
            stop, codes = threading.Event(), list[int]()
            threads = _attackers(svc, stop, codes)
            time.sleep(1.0)
            loaded = _reads(svc, 20)
            stop.set()
            for t in threads:
                t.join(30)
            p99, base99 = _p(loaded, 0.99), _p(alone, 0.99)
            figures = (
                f"alone p50 {statistics.median(alone):.0f} ms p99 {base99:.0f} ms ({len(alone)} reads); under attack "
                f"p50 {statistics.median(loaded):.0f} ms p99 {p99:.0f} ms ({len(loaded)} reads, ratio "
                f"{p99 / base99:.1f}x); attacker answers {sorted(set(codes))}"
            )
            return p99 < 200 and set(codes) <= {408, 503, 429}, figures

        @A("new", "DML inside a CTE on the SQL API")
        def _() -> tuple[bool, str]:
            with svc.client("olga") as c:
                before = c.post("/api/sql", json={"query": "SELECT count(*) FROM users"}).json()["rows"]
                r = c.post("/api/sql", json={"query": "WITH x AS (DELETE FROM users RETURNING *) SELECT * FROM x"})
                after = c.post("/api/sql", json={"query": "SELECT count(*) FROM users"}).json()["rows"]
            return r.status_code == 400 and before == after, f"{r.status_code}: {r.json().get('error', '')[:80]}"

        @A("34", "one expensive SQL function call, then a reviewer's next action")
        def _() -> tuple[bool, str]:
            calls = [
                "SELECT length(repeat('x', 2000000000))",
                "SELECT length(string_agg('abcdefghij', '')) FROM range(300000000)",
                "SELECT length(list_sum(range(100000000))::VARCHAR)",
            ]
            before, seen, ok = svc.rss_mb(), [], True
            with svc.client("v0", timeout=120) as viewer, svc.client("norm") as reviewer:
                for q in calls:
                    t0 = time.monotonic()
                    r = viewer.post("/api/sql", json={"query": q})
                    took = time.monotonic() - t0
                    after = reviewer.post("/api/adapters/no/such/reject", json={"note": "x"}).status_code
                    ok &= r.status_code in (408, 413) and took < 5 and after == 404
                    seen.append(f"{q.split('(')[1]}: {r.status_code} in {took:.1f} s, reject {after}")
            grew = svc.rss_mb() - before
            return ok and grew < 300, "; ".join(seen) + f"; service RSS +{grew:.0f} MB"

        @A("34", "a fifth user's queries while 4 viewers loop the slowest SQL (a fair share)")
        def _() -> tuple[bool, str]:
            stop, codes = threading.Event(), list[int]()
            threads = _attackers(svc, stop, codes)
            time.sleep(8.0)  # every looper has run: they fill the slot and the queue
            waits, answers = [], []
            with svc.client("norm", timeout=60) as c:
                for _ in range(5):
                    t0 = time.monotonic()
                    answers.append(c.post("/api/sql", json={"query": "SELECT count(*) FROM users"}).status_code)
                    waits.append(time.monotonic() - t0)
            stop.set()
            for t in threads:
                t.join(30)
            figures = f"answers {answers}, waits {', '.join(f'{w:.1f}' for w in waits)} s (limit 3 s)"
            return answers == [200] * 5 and max(waits) < 4.0, figures

        @A("new", "a viewer reads users.token_hash (SELECT *, #3, COLUMNS, query_table, a filter)")
        def _() -> tuple[bool, str]:
            forms = [
                "SELECT * FROM users",
                "SELECT #3 FROM users",
                "SELECT COLUMNS('.*hash') FROM users",
                "SELECT * FROM query_table('users')",
                "SELECT name FROM users WHERE token_hash > 'a'",
            ]
            with svc.client("v0") as c:
                codes = [c.post("/api/sql", json={"query": q}).status_code for q in forms]
            return all(code == 400 for code in codes), f"answers {codes}"

        @A("new", "60 unauthenticated 100 MB bodies, then 20 chunked 5 MB bodies")
        def _() -> tuple[bool, str]:
            before = svc.rss_mb()
            codes = []
            with httpx.Client(base_url=svc.url, timeout=30) as c:
                body = b"x" * (100 * 1024 * 1024)
                for _ in range(60):
                    try:
                        codes.append(c.post("/api/sql", content=body).status_code)
                    except httpx.HTTPError:
                        codes.append(-1)  # the server closed the connection after its 413, mid-upload

                def chunks() -> Any:
                    for _ in range(50):
                        yield b"y" * 100_000

                for _ in range(20):
                    try:
                        codes.append(c.post("/api/find", content=chunks()).status_code)
                    except httpx.HTTPError:
                        codes.append(-1)
            grew = svc.rss_mb() - before
            return set(codes) <= {413, -1} and grew < 100, f"answers {sorted(set(codes))}, RSS +{grew:.0f} MB"

        @A("new", "decompression bombs of every file type on a viewer's GET of the adapter page")
        def _() -> tuple[bool, str]:
            before = svc.rss_mb()
            seen = []
            with svc.client("v1", timeout=120) as c:
                for repo in bombs:
                    r = c.get(f"/api/adapters/{repo}", params={"rows": 3})
                    seen.append(f"{repo} {r.status_code}")
            peak = _peak_rss_mb(svc.proc.pid)
            return peak - before < 500, f"{'; '.join(seen)}; service RSS {before:.0f} -> peak {peak:.0f} MB"

        @A("new", "/health and /api/me while every SQL slot is busy")
        def _() -> tuple[bool, str]:
            stop, codes = threading.Event(), list[int]()
            threads = _attackers(svc, stop, codes)
            time.sleep(0.5)
            worst = 0.0
            with svc.client("norm") as c:
                for _ in range(20):
                    t0 = time.perf_counter()
                    c.get("/health")
                    c.get("/api/me")
                    worst = max(worst, time.perf_counter() - t0)
            stop.set()
            for t in threads:
                t.join(30)
            return worst < 1.0, f"slowest /health + /api/me pair {worst * 1000:.0f} ms"

        @A("new", "SIGTERM while viewers run slow statements")
        def _() -> tuple[bool, str]:
            stop, codes = threading.Event(), list[int]()
            _attackers(svc, stop, codes)
            time.sleep(1.0)
            took = svc.stop()
            stop.set()
            return took < 6.0, f"stopped in {took:.1f} s"

    finally:
        svc.stop()

    # ---- the local Hub -----------------------------------------------------------------------------
    @A("new", "local Hub: a hard link to a file outside the folder, and a FIFO")
    def _() -> tuple[bool, str]:
        secret = p.work / "secret.txt"
        secret.write_text("root:x:0:0\n")
        repo = p.hub_dir / "lab" / "links" / "data"
        repo.mkdir(parents=True, exist_ok=True)
        (repo / "train.jsonl").write_text('{"q": 1}\n')
        os.link(secret, repo / "hard.jsonl")
        os.mkfifo(repo / "pipe.jsonl")
        codes = [
            httpx.get(f"{p.url}/datasets/lab/links/resolve/main/data/{n}", timeout=30).status_code
            for n in ("hard.jsonl", "pipe.jsonl")
        ]
        return codes == [404, 404] and p.hub_alive(), f"answers {codes}"

    @A("new", "local Hub stopped by SIGTERM leaves no viewer worker")
    def _() -> tuple[bool, str]:
        from pipeline.servers.http import free_port

        mark = f"probe-{os.getpid()}-{time.time_ns()}"
        port = free_port()
        hub = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli.app", "hub", "serve", str(p.hub_dir), "--port", str(port), "-q"],
            cwd=ROOT,
            env={**p.env(), "DRAFTSET_PROBE_MARK": mark},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                httpx.get(url + "/api/datasets", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        httpx.get(
            f"{url}/viewer/first-rows",
            params={"dataset": "lab/links", "config": "default", "split": "train"},
            timeout=120,
        )
        during = len(_marked(mark))
        hub.send_signal(signal.SIGTERM)
        hub.wait(timeout=30)
        time.sleep(2)
        left = _marked(mark)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        return not left, f"{during} processes while serving, {len(left)} left after SIGTERM"


def _marked(value: str) -> list[int]:
    needle = f"DRAFTSET_PROBE_MARK={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if needle in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    found.append(int(entry))
            except OSError:
                pass
    return found


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


# Runs a command and prints its peak RSS (MB) last: the CLI process itself, not the capped workers (whose
# parent is the forkserver, so they are not among the children this wrapper waits for).
_MEASURED = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:]); "
    "print('peak_rss_mb', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, file=sys.stderr)"
)
