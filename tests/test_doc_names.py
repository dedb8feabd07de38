"""Docstrings (runbook's, the sandbox programs', the benchmarks') and docs name only what exists: every runbook
module, class, function, file and sandbox program they name is there (a docstring that names what no longer exists
is worse than none).

What counts as a name, so that nothing else is flagged:
- a dotted name from the package root, `runbook.core.scan.scan_output`, anywhere in the text;
- a file path of the repository (`runbook/core/scan.py`, `core/scan.py`, `tests/agent/test_prompts.py`,
  `sandbox/programs/show`), the package's paths read from runbook/ first;
- an inline code span whose first part is a module or class of runbook: `core.choice.choice_record`, `Hit.heading`,
  `rbk.StoreReader` (fenced code blocks hold variables, so only inline spans);
- an `import X` or `from X import Y` (X must be importable here or in the sandbox, Y defined in X);
- a word `rb...`: the sandbox's modules and programs are named so (rbk, rbplan), and an old one (rbcore) is not.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "runbook"
PROGRAMS_DIR = PACKAGE / "sandbox" / "programs"
PROGRAMS = ("recall", "search", "show", "rbplan")
DOCS = ["README.md", "CONTRIBUTING.md", "docs/*.md", "runbook/sandbox/programs/README.md"]
TOP_FOLDERS = ("runbook", "tests", "benchmarks", "scripts", "eval", "docs", ".ci")

_DOTTED = re.compile(r"(?<![\w.])runbook(?:\.\w+)+")
_PATH = re.compile(r"(?<![\w./-])((?:\.ci|[\w-]+)(?:/[\w.-]+)+/?)")
_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_CODE_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|[A-Z]\w*")
"""An inline code span that is a name and nothing else: `core.scan.scan_output`, `Hit.heading()`, `Retriever`."""
_CODE_LINE = re.compile(r"^\s*(?:>>> )?(?:from|import) \w")
FILE_SUFFIXES = {"py", "json", "jsonl", "toml", "md", "txt", "sh", "png", "jpg", "gz", "tsv", "sqlite", "idx", "io",
                 "npz", "csv", "yaml", "yml", "html", "log", "pkl"}  # fmt: skip
"""A dotted word ending so is a file or a host name (`runbook.json`, `docker.io`), not a module's attribute."""
_IMPORT = re.compile(r"(?:^|[;\s`(])(?:from\s+([\w.]+)\s+import\s+(\w+)|import\s+([\w.]+))")
_RB_WORD = re.compile(r"(?<![\w./-])rb[a-z]+\b")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


@dataclass
class Names:
    """What runbook defines, read from its source: modules, their top-level names and each class's members."""

    modules: dict[str, Path] = field(default_factory=dict)
    members: dict[str, set[str]] = field(default_factory=dict)
    """module or 'module.Class' -> the names defined in it (imports included: a module re-exports them)."""
    short: dict[str, set[str]] = field(default_factory=dict)
    """a module's or class's last name -> its qualified names."""

    def add_module(self, qualname: str, path: Path) -> None:
        self.modules[qualname] = path
        self.short.setdefault(qualname.rsplit(".", 1)[-1], set()).add(qualname)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        self.members[qualname] = _defined(tree.body)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.members.setdefault(f"{qualname}.{node.name}", set()).update(_class_members(node))
                self.short.setdefault(node.name, set()).add(f"{qualname}.{node.name}")

    def resolves(self, parts: list[str], start: str) -> bool:
        """Whether `parts` name something inside the module or class `start`."""
        here = start
        for part in parts:
            if f"{here}.{part}" in self.modules or f"{here}.{part}" in self.members:
                here = f"{here}.{part}"
            elif part in self.members.get(here, ()):
                return True  # a function, a constant, an attribute: what follows is beyond the source's reach
            else:
                return False
        return True


def _defined(body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.If | ast.Try | ast.With):
            inner = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            inner += [s for handler in getattr(node, "handlers", []) for s in handler.body]
            names |= _defined(inner)
    return names


def _class_members(node: ast.ClassDef) -> set[str]:
    names = _defined(node.body)
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == "self":
            names.add(inner.attr)
    return names


def package_names() -> Names:
    names = Names()
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.add_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts), path)
    for program in PROGRAMS:
        names.add_module(f"runbook.sandbox.programs.{program}", PROGRAMS_DIR / program)
    return names


def sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py")) + [PROGRAMS_DIR / p for p in PROGRAMS]


def docstrings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every module, class and function docstring of a Python file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((node.body[0].lineno, doc))
    return found


def texts() -> list[tuple[str, str, bool]]:
    """(where, text, is a document) for every docstring and doc the check reads."""
    files = [*sources(), *sorted((ROOT / "benchmarks").glob("*.py"))]
    out = [(f"{p.relative_to(ROOT)}:{line}", doc, False) for p in files for line, doc in docstrings(p)]
    for pattern in DOCS:
        out += [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"), True) for p in sorted(ROOT.glob(pattern))]
    return out


def wrong_names(text: str, names: Names, *, is_doc: bool, folder: Path = PACKAGE) -> list[str]:
    """Every name in `text` that the checks above say does not exist."""
    wrong = [dotted for dotted in _DOTTED.findall(text) if not _code_name_exists(dotted, names)]
    wrong += [path for path in _PATH.findall(text) if _names_a_file(path) and not _path_exists(path, folder)]
    fences = _FENCE.findall(text) if is_doc else []
    spans = _SPAN.findall(_FENCE.sub("", text) if is_doc else text)
    for span in spans:
        code = span.strip()
        if _CODE_NAME.fullmatch(code) and not _code_name_exists(code, names):
            wrong.append(code)
    code_lines = [*spans, *fences, *(line for line in text.splitlines() if _CODE_LINE.match(line))]
    for module, imported, plain in _IMPORT.findall("\n".join(code_lines)):
        if not _importable(module or plain, imported, names):
            wrong.append(f"import {module or plain}{'.' + imported if imported else ''}")
    known_rb = {q.rsplit(".", 1)[-1] for q in names.modules} | set(PROGRAMS)
    wrong += [word for word in _RB_WORD.findall(text) if word not in known_rb]
    return wrong


def _names_a_file(path: str) -> bool:
    """A path of a source, script, config or document of the repository (a store's or a run's files are not)."""
    first = path.split("/", 1)[0]
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    if "<" in path or "*" in path or first not in (*TOP_FOLDERS, *subpackages):
        return False
    tail = path.rstrip("/.,;:)").rsplit("/", 1)[-1]
    programs = path.removeprefix("runbook/").startswith("sandbox/programs/")
    return tail.endswith((".py", ".sh", ".toml", ".md")) or (programs and "." not in tail)


def _path_exists(path: str, folder: Path) -> bool:
    path = path.rstrip(".,;:)")
    return any((base / path).exists() for base in (PACKAGE, ROOT, folder))


def _code_name_exists(name: str, names: Names) -> bool:
    parts = name.removesuffix("()").split(".")
    if parts[-1] in FILE_SUFFIXES or parts[-1].startswith("__"):
        return True  # a file or host name; a module's own attribute (__file__)
    if parts[0] == "runbook":
        return names.resolves(parts[1:], "runbook")
    starts = names.short.get(parts[0])
    if not starts:
        return not (len(parts) == 1 and _looks_like_ours(parts[0], names))
    return any(names.resolves(parts[1:], start) for start in starts)


def _looks_like_ours(word: str, names: Names) -> bool:
    """A lone CamelCase word in code that names no class of runbook: flagged when it reads like one of runbook's
    kinds of class (a Policy, a Memory, a Sandbox, ...)."""
    kinds = ("Policy", "Memory", "Sandbox", "Error", "Params", "Settings", "Reader", "Store", "Planner", "Retriever")
    return word.endswith(kinds) and word not in names.short


def _importable(module: str, imported: str, names: Names) -> bool:
    top = module.split(".")[0]
    if top == "runbook":
        return names.resolves(module.split(".")[1:] + ([imported] if imported else []), "runbook")
    if top in names.short and any(q.startswith("runbook.sandbox.programs.") for q in names.short[top]):
        return True  # the sandbox's own modules (rbk), on the programs' path there
    if top in sys.stdlib_module_names:
        return True
    return importlib.util.find_spec(top) is not None


@pytest.fixture(scope="module")
def names() -> Names:
    return package_names()


def test_docstrings_and_docs_name_only_what_exists(names):
    read = texts()
    assert len(read) > 500 and any(where == "README.md" for where, _, _ in read)
    wrong = [
        f"{where}: {name}"
        for where, text, is_doc in read
        for name in wrong_names(text, names, is_doc=is_doc, folder=(ROOT / where.split(":")[0]).parent)
    ]
    assert not wrong, "these name nothing that exists:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    "planted",
    [
        "the host imports it as `runbook.sandbox.programs.rbcore`",
        "`model.ModelPolicy` is the base of the two model policies",
        "the planner sends `import rbscan; rbscan.scan({...})`",
        "see rbdetail for the second program",
        "the loop lives in `runbook/agent/loops.py`",
        "the tool specs (`agent/spec.py`)",
        "`core.choice.choose_record` prints the choice",
        "the `sandbox/programs/grep` program",
        "a `RetrieverPolicy` picks the call",
        "from runbook.config import Setttings",
    ],
)
def test_a_planted_wrong_name_is_caught(names, planted):
    assert wrong_names(planted, names, is_doc=False), planted


@pytest.mark.parametrize(
    "right",
    [
        "the host imports it as `runbook.core`, and `runbook.core.choice.choice_record` prints the choice",
        "`Hit.heading`, `rbk.StoreReader`, `core/scan.py`, `sandbox/programs/show` and `tests/test_context.py`",
        "the planner sends `rbplan --request JSON`; `import rbk` reads the store",
        "`OfflinePlanner`, `CodingAgentMemory`, `DockerSandbox`, `RetrievalSettings` and `Settings`",
        "the store's `pools/slices/pages.jsonl` and `trajectories/<id>/states/0003.md`",
    ],
)
def test_a_right_name_passes(names, right):
    assert not wrong_names(right, names, is_doc=False), right


def test_the_package_root_is_imported_by_nothing_inside_it():
    """docs/architecture.md says so: runbook/__init__.py is the public API over the layers, never under them."""
    importers = []
    for path in sources():
        package = path.relative_to(ROOT).parent.parts
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                target = ".".join(package[: len(package) - node.level + 1]) if node.level else node.module
                if target == "runbook" and (node.level == 0 or not node.module):
                    importers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.Import) and any(alias.name == "runbook" for alias in node.names):
                importers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not importers, importers


def test_the_core_docstring_lists_every_core_module():
    """runbook/core/__init__.py's table of the core's modules names each of them (it once listed 11 of 34)."""
    table = (PACKAGE / "core" / "__init__.py").read_text(encoding="utf-8").split("docs/architecture.md")[0]
    listed = set(re.findall(r"\w+", table))
    modules = {p.stem for p in (PACKAGE / "core").glob("*.py") if p.stem != "__init__"}
    assert modules <= listed, f"runbook/core/__init__.py does not list: {sorted(modules - listed)}"
