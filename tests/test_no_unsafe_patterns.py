"""No unsafe patterns anywhere in the repository (docs/reliability.md): checked on the AST of every Python file.

- no pickle/marshal/shelve/dill/joblib (models and caches are JSON);
- no eval/exec/compile of strings, no os.system/os.popen, no shell=True, no subprocess command given as one string;
- YAML only through a safe loader (no yaml.unsafe_load/full_load, no yaml.load with a non-Safe Loader);
- SQL parameterised: no f-string, %-formatted, .format()-ed or concatenated query passed to execute() (PRAGMA
  excepted: SQLite binds no parameters there).
ruff's S rules (bandit) cover the same ground in CI; this test needs no extra tool and cannot be silenced by a noqa.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DIRS = ("logdoctor", "tools", "tests", "bench", "fuzz", "scripts")
BANNED_MODULES = {"pickle", "cPickle", "_pickle", "marshal", "shelve", "dill", "joblib", "cloudpickle"}
BANNED_CALLS = {
    "eval",
    "exec",
    "compile",
    "os.system",
    "os.popen",
    "os.spawnl",
    "os.spawnlp",
    "os.execl",
    "yaml.unsafe_load",
    "yaml.full_load",
    "yaml.unsafe_load_all",
    "yaml.full_load_all",
    "asyncio.create_subprocess_shell",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
}
SUBPROCESS = {
    "subprocess.run",
    "subprocess.Popen",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
}
SQL_CALLS = {"execute", "executemany", "executescript"}


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


def _is_built_string(node: ast.AST) -> bool:
    """A string made at run time from parts: f-string, %, +, .format()."""
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        return isinstance(node.left, (ast.Constant, ast.JoinedStr, ast.BinOp)) and (
            not isinstance(node.left, ast.Constant) or isinstance(node.left.value, str)
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return True
    return False


def _is_pragma(node: ast.AST) -> bool:
    """SQLite cannot bind parameters in a PRAGMA (PRAGMA user_version = ?): an f-string of code values is allowed
    there, and only there."""
    return (
        isinstance(node, ast.JoinedStr)
        and bool(node.values)
        and isinstance(node.values[0], ast.Constant)
        and str(node.values[0].value).lstrip().upper().startswith("PRAGMA ")
    )


def problems(source: str, path: str = "<src>") -> list[str]:
    tree = ast.parse(source, filename=path)
    safe_names = set()  # module-level names bound to a safe YAML loader
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and "SafeLoader" in ast.unparse(node.value):
            safe_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    out = []
    for node in ast.walk(tree):
        where = f"{path}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            out += [f"{where}: import {a.name}" for a in node.names if a.name.split(".")[0] in BANNED_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in BANNED_MODULES:
            out.append(f"{where}: from {node.module} import ...")
        elif isinstance(node, ast.Call):
            name = _name(node.func)
            if name in BANNED_CALLS:
                out.append(f"{where}: {name}()")
            for kw in node.keywords:
                if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    out.append(f"{where}: {name}(shell=...)")
            if (
                name in SUBPROCESS
                and node.args
                and (
                    (isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str))
                    or _is_built_string(node.args[0])
                )
            ):
                out.append(f"{where}: {name}() with a command string instead of an argument list")
            if name == "yaml.load" or name == "yaml.load_all":
                loader = next(
                    (kw.value for kw in node.keywords if kw.arg == "Loader"),
                    node.args[1] if len(node.args) > 1 else None,
                )
                text = ast.unparse(loader) if loader is not None else ""
                if "Safe" not in text and text not in safe_names:
                    out.append(f"{where}: {name}() without a SafeLoader")
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in SQL_CALLS
                and node.args
                and _is_built_string(node.args[0])
                and not _is_pragma(node.args[0])
            ):
                out.append(f"{where}: SQL built from strings in .{node.func.attr}(); use ? parameters")
    return out


def _files() -> list[Path]:
    return [p for d in DIRS if (ROOT / d).is_dir() for p in sorted((ROOT / d).rglob("*.py"))]


def test_repository_has_no_unsafe_patterns():
    files = _files()
    assert len(files) > 50
    found = [p for f in files for p in problems(f.read_text(encoding="utf-8"), str(f.relative_to(ROOT)))]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "snippet",
    [
        "import pickle",
        "from joblib import dump",
        "eval(x)",
        "exec('1')",
        "import os\nos.system('ls')",
        "import subprocess\nsubprocess.run('ls -l', check=True)",
        "import subprocess\nsubprocess.run(cmd, shell=True)",
        "import subprocess\nsubprocess.Popen(f'ls {d}')",
        "import yaml\nyaml.load(t)",
        "import yaml\nyaml.load(t, Loader=yaml.Loader)",
        "import yaml\nyaml.full_load(t)",
        "db.execute(f'SELECT * FROM a WHERE id = {i}')",
        "db.execute('SELECT * FROM a WHERE id = %s' % i)",
        "db.execute('DELETE FROM a WHERE host = ' + h)",
        "db.execute('SELECT {}'.format(c))",
    ],
)
def test_checker_catches(snippet):
    assert problems(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        "import subprocess\nsubprocess.run(['ls', '-l'], check=True)",
        "import yaml\nyaml.safe_load(t)",
        "import yaml\n_L = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)\nyaml.load(t, Loader=_L)",
        "db.execute('SELECT * FROM a WHERE id = ?', (i,))",
        "re.compile(p)",
        "ast.literal_eval(s)",
        "subprocess.run(args, shell=False)",
        "db.execute(f'PRAGMA user_version = {n}')",
    ],
)
def test_checker_allows(snippet):
    assert not problems(snippet), problems(snippet)
