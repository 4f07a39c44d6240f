"""A throwaway PostgreSQL cluster for the history tests: `initdb` in a temporary folder (as the `postgres` user when
run as root: `runuser -u postgres`), listening on a Unix socket only, stopped and removed at the end.

    cluster = PgCluster.start()      # or None when the server binaries are absent (the caller skips, saying why)
    url = cluster.new_database()     # postgresql:///NAME?host=SOCKDIR&user=postgres
    cluster.stop(); cluster.start_again(); cluster.destroy()
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path


def pg_bindir() -> Path | None:
    """Debian's server binaries (/usr/lib/postgresql/N/bin), else whatever initdb and pg_ctl are on PATH."""
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(d, "initdb").exists() and Path(d, "pg_ctl").exists():
            return Path(d)
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl and Path(initdb).parent == Path(pg_ctl).parent:
        return Path(initdb).parent
    return None


def why_no_server() -> str | None:
    """None when a cluster can be started here; else the reason the PostgreSQL tests skip."""
    if pg_bindir() is None:
        return "PostgreSQL server binaries (initdb, pg_ctl) are not installed: apt-get install postgresql"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
        if shutil.which("runuser") is None:
            return "running as root and runuser is not available"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed: pip install 'logdoctor[postgres]'"
    return None


class PgCluster:
    def __init__(self, root: Path, bindir: Path):
        self.root = root
        self.bindir = bindir
        self.data = root / "data"
        self.sock = root / "sock"
        self.log = root / "server.log"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = list(args)
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=120)

    @classmethod
    def start(cls) -> PgCluster:
        bindir = pg_bindir()
        assert bindir is not None
        root = Path(tempfile.mkdtemp(prefix="ld-pg-"))
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        c = cls(root, bindir)
        c._run("mkdir", "-p", str(c.sock))
        c._run(
            str(bindir / "initdb"),
            "-D",
            str(c.data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale",
            "C",
        )
        c.start_again()
        return c

    def start_again(self) -> None:
        opts = f"-k {self.sock} -c listen_addresses='' -c fsync=off -c max_connections=60"
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-o", opts, "-l", str(self.log), "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def url(self, db: str = "postgres") -> str:
        return f"postgresql:///{db}?host={self.sock}&user=postgres"

    def new_database(self) -> str:
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        from psycopg import sql

        create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))  # an identifier, quoted by psycopg
        with psycopg.connect(self.url(), autocommit=True) as con:
            con.execute(create)
        return self.url(name)

    def rows(self, url: str, sql: str) -> list[tuple]:
        import psycopg

        with psycopg.connect(url) as con:
            return con.execute(sql).fetchall()

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
