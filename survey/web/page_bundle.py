"""The respondent page's scripts in one file: its modules, as written, each in a function of its own.

A page of ES modules costs one request per module (the respondent page: about twenty), and the
registry of client_js/mechanisms/index.js imports every mechanism although a survey uses a few.
Without a build step, the server joins, when asked, the modules one page runs into one script:
each module's text is kept as it is inside ``define("name", function (exports, load) { ... })``;
only its import and export statements change, mechanically, into the loader's
words (``import { a } from './x.js'`` becomes ``const { a } = load("x.js")``; ``export`` before a
declaration is dropped and the name is exported through a getter; ``export default`` becomes
``exports.default =``). A mechanism module the survey's design does not name is left out: its
import in the registry becomes ``undefined``, which the registry drops. The lines that hold only a
comment are left out (survey.web.js_comments: two fifths of the bytes); nothing else is changed or
minified, and the page still lists, and links, every module it runs, each as written with its
comments. The joined text is cached by
its inputs' modification times and served like any other text asset (gzip, ETag).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import re
from pathlib import Path

from .js_comments import without_comment_lines

REGISTRY = "mechanisms/index.js"
_IMPORT = re.compile(
    r"""^import\s+(?:(?P<default>\w+)\s*,?\s*)?(?:\{(?P<names>[^}]*)\}\s*)?from\s*['"](?P<path>\.{1,2}/[\w./-]+\.js)['"];?""",
    re.MULTILINE,
)
_EXPORT_DECLARATION = re.compile(r"^export\s+(?P<keyword>(?:async\s+)?function\*?|const|let|class)\s+(?P<rest>.*)$",
                                 re.MULTILINE)
_EXPORT_DEFAULT = re.compile(r"^export\s+default\s+", re.MULTILINE)
_EXPORT_LIST = re.compile(r"^export\s*[{*]", re.MULTILINE)
_MECHANISM = re.compile(r"""^\s*kind:\s*'(?P<kind>\w+)',\s*\n\s*name:\s*'(?P<name>\w+)',""", re.MULTILINE)
_LOADER = """// ldp-survey: the modules this page runs, joined by the server (survey/web/page_bundle.py). Each is
// the file of the same name under /static/js/, as written, inside a function of its own; only its
// import and export lines are rewritten into this loader's words, and its comment lines left out.
const modules = new Map();
function define(name, body) {
  modules.set(name, { body, exports: null });
}
function load(name) {
  const module = modules.get(name);
  if (module.exports === null) {
    module.exports = {};
    module.body(module.exports, load);
  }
  return module.exports;
}
"""


def resolve(importer: str, specifier: str) -> str:
    """Return the client_js path of ``specifier`` imported by ``importer`` (as the browser resolves it)."""
    parts = importer.split("/")[:-1]
    for part in specifier.split("/"):
        if part == "..":
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def mechanism_files(read) -> dict[tuple[str, str], str]:
    """Return {(kind, name): module path} of every mechanism module the registry imports."""
    found = {}
    for match in _IMPORT.finditer(read(REGISTRY)):
        path = resolve(REGISTRY, match.group("path"))
        declared = _MECHANISM.search(read(path))
        if match.group("default") and declared:
            found[(declared.group("kind"), declared.group("name"))] = path
    return found


def bundle_modules(entry: str, used: frozenset | None, read) -> tuple[str, ...]:
    """Return the modules of ``entry`` the page runs, dependencies first, without the mechanisms not in ``used``.

    ``used`` holds (kind, mechanism) pairs of the design (None: every mechanism); ``read(path)``
    returns a module's text.
    """
    omitted = set() if used is None else {path for pair, path in mechanism_files(read).items() if pair not in used}
    order: list[str] = []

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in trail:
            raise ValueError(f"import cycle through {name}: the bundle loader needs none")
        for match in _IMPORT.finditer(read(name)):
            path = resolve(name, match.group("path"))
            if not (name == REGISTRY and path in omitted):
                visit(path, (*trail, name))
        order.append(name)

    visit(entry, ())
    return tuple(order)


def rewrite(name: str, source: str, present: set[str]) -> str:
    """Return module ``name``'s text with its imports and exports in the loader's words (see the module docstring)."""
    exported: list[str] = []

    def imported(match: re.Match) -> str:
        path = resolve(name, match.group("path"))
        lines = []
        if match.group("default"):
            value = f"load({json.dumps(path)}).default" if path in present else "undefined"
            lines.append(f"const {match.group('default')} = {value};")
        if match.group("names") is not None:
            if path not in present:
                raise ValueError(f"{name} imports names from {path}, which this page leaves out")
            names = match.group("names").replace(" as ", ": ")
            lines.append(f"const {{{names}}} = load({json.dumps(path)});")
        return " ".join(lines)

    def declaration(match: re.Match) -> str:
        rest = match.group("rest")
        if rest.startswith("{"):
            exported.extend(n.strip() for n in rest[1:rest.index("}")].split(",") if n.strip())
        else:
            exported.append(re.match(r"[\w$]+", rest).group(0))
        return f"{match.group('keyword')} {rest}"

    if _EXPORT_LIST.search(source):
        raise ValueError(f"{name} has an export list or re-export, which the page script's loader does not take")
    text = _IMPORT.sub(imported, source)
    text = _EXPORT_DECLARATION.sub(declaration, text)
    text = _EXPORT_DEFAULT.sub("exports.default = ", text)
    getters = ", ".join(f"{n}: {{ get: () => {n}, enumerable: true }}" for n in exported)
    head = f"Object.defineProperties(exports, {{ {getters} }});\n" if exported else ""
    return f"define({json.dumps(name)}, function (exports, load) {{\n{head}{text}}});\n"


def join(entry: str, used: frozenset, read) -> str:
    """Return the one script of ``entry``'s page: the loader, each module in a function, then ``entry`` run."""
    names = bundle_modules(entry, used, read)
    present = set(names)
    parts = [_LOADER, *(rewrite(name, without_comment_lines(read(name)), present) for name in names),
             f"load({json.dumps(entry)});\n"]
    return "\n".join(parts)


@functools.lru_cache(maxsize=64)
def packed_script(entry: str, used: frozenset, stamps: tuple, folder: str) -> tuple[bytes, bytes, str]:
    """Return the joined script's bytes, their gzip form and a strong ETag, for files as ``stamps`` describes them."""
    root = Path(folder)
    body = join(entry, used, lambda path: (root / path).read_text(encoding="utf-8")).encode("utf-8")
    return body, gzip.compress(body, compresslevel=9, mtime=0), hashlib.sha256(body).hexdigest()[:32]


@functools.lru_cache(maxsize=16)
def _every_module(entry: str, folder: str) -> tuple[str, ...]:
    """Return every module ``entry`` may run under ``folder``, all mechanisms included (the files to watch)."""
    return bundle_modules(entry, None, lambda path: (Path(folder) / path).read_text(encoding="utf-8"))


def script_for(entry: str, used: frozenset, folder: Path) -> tuple[bytes, bytes, str]:
    """Return ``packed_script`` of the files under ``folder`` now (joined again when one of them changed)."""
    names = _every_module(entry, str(folder))
    stamps = tuple((name, (folder / name).stat().st_mtime_ns, (folder / name).stat().st_size) for name in names)
    return packed_script(entry, used, stamps, str(folder))


def used_mechanisms(design: dict) -> frozenset:
    """Return the (kind, mechanism) pairs of a design's questions, with their per-wave layers' (a series' two layers)."""
    entries = [entry for question in design.get("questions", ()) for entry in (question, question.get("wave")) if entry]
    return frozenset((entry["kind"], entry["mechanism"]) for entry in entries)


def mechanisms_parameter(used: frozenset) -> str:
    """Return the URL parameter naming the mechanisms (``choice.grr,yes_no.rr``), sorted."""
    return ",".join(sorted(f"{kind}.{name}" for kind, name in used))


def parse_mechanisms(text: str) -> frozenset:
    """Return the (kind, mechanism) pairs of ``mechanisms_parameter``'s text; raise ValueError if malformed."""
    pairs = [part.split(".") for part in text.split(",") if part]
    if any(len(pair) != 2 or not all(re.fullmatch(r"\w+", word) for word in pair) for pair in pairs):
        raise ValueError(f"mechanisms must be kind.name pairs separated by commas, got {text!r}")
    return frozenset(tuple(pair) for pair in pairs)
