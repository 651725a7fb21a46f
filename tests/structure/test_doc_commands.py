"""The visprof command lines of README.md and docs/ use only options their command has, and each
synopsis (a ``$ visprof CMD ...`` line with ``[...]``) lists every option of its command, with its
choices where it has them: a synopsis once lacked --calibration, --gpus and --excess fraction."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from visprof.cli.app import build_parser

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    """Each command's parser, by its words: 'profile', 'nsys import', 'bounds build', ..."""
    out = {}

    def walk(parser, words):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if words:
            out[" ".join(words)] = parser
        for action in subs:
            for name, sub in action.choices.items():
                walk(sub, [*words, name])

    walk(build_parser(), [])
    return out


PARSERS = command_parsers()


def documented_lines() -> list[tuple[str, str]]:
    """(where, line) for every line that runs visprof in a code block: fenced ones (not Python) and
    the README's indented ones; a continued line (ending in ``\\``) joined with the next."""
    out = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        blocks = [code for lang, code in FENCE.findall(text) if lang != "python"]
        blocks += ["\n".join(line[4:] for line in chunk.splitlines())
                   for chunk in re.findall(r"(?m)(?:^    \S.*\n)+", FENCE.sub("", text))]
        for block in blocks:
            lines = block.replace("\\\n", " ").splitlines()
            for i, line in enumerate(lines):
                line = line.strip().removeprefix("$ ")
                if re.match(r"(python3? -m )?visprof [a-z]", line):
                    # a synopsis may run on over the lines indented under it
                    rest = [ln.strip() for ln in lines[i + 1:i + 4] if ln.startswith(" ") and ln.strip().startswith("[")]
                    out.append((f"{path.name}: {line[:60]}", " ".join([line, *rest])))
    return out


def command_of(line: str) -> tuple[str, argparse.ArgumentParser] | None:
    words = line.split("#")[0].split()
    words = words[words.index("visprof") + 1:]
    for n in (2, 1):
        key = " ".join(words[:n])
        if key in PARSERS:
            return key, PARSERS[key]
    return None


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings if s not in ("-h", "--help")}


LINES = documented_lines()


def test_the_docs_run_visprof_in_many_places():
    assert len(LINES) > 40 and sum("[" in line for _, line in LINES) >= 4


@pytest.mark.parametrize("where, line", LINES, ids=[w for w, _ in LINES])
def test_a_documented_command_line_uses_options_its_command_has(where, line):
    found = command_of(line)
    if found is None:  # an output line such as "visprof sweep: complete ...", or "visprof 0.1.0"
        assert re.match(r"(python3? -m )?visprof( [a-z-]+)*:|visprof +\d", line), f"no such command: {line}"
        return
    key, parser = found
    known = options(parser)
    code = line.split("#")[0]
    unknown = sorted({o for o in OPTION.findall(code) if o not in known and not re.match(r"-\d", o)})
    assert not unknown, f"visprof {key} has no {', '.join(unknown)}"
    if "[" in code:  # a synopsis: every option, and each one's choices
        missing = sorted({a.option_strings[-1] for a in known.values() if not set(a.option_strings) & set(OPTION.findall(code))})
        assert not missing, f"the synopsis of visprof {key} lacks {', '.join(missing)}"
        for action in {id(a): a for a in known.values()}.values():
            if action.choices:
                listed = re.search(re.escape(action.option_strings[-1]) + r" \{([^}]*)\}", code) or \
                    re.search("|".join(map(re.escape, action.option_strings)) + r" \{([^}]*)\}", code)
                assert listed and set(listed.group(1).split(",")) == set(action.choices), \
                    f"the synopsis of visprof {key} gives {action.option_strings[-1]} other choices than {sorted(action.choices)}"


# Where each command's options are documented (the command's own section or file).
DOCUMENTED_IN = {"profile": ["cli.md"], "info": ["cli.md"], "compare-compile": ["cli.md", "compile.md"], "diff": ["cli.md"],
                 "sweep": ["sweep.md"], "export": ["sweep.md"], "ncu": ["nsight.md"], "nsys import": ["nsight.md"],
                 "nsys run": ["nsight.md"], "bounds build": ["nsight.md", "hardware-sensitivity.md", "cli.md"],
                 "bounds coverage": ["nsight.md", "hardware-sensitivity.md", "cli.md"],
                 **{c: ["cli.md", "hardware-sensitivity.md"] for c in ("import-timm", "compare", "predict", "calibrate",
                                                                     "report")}}


@pytest.mark.parametrize("command", sorted(c for c in PARSERS if c not in ("nsys", "bounds")))
def test_every_option_of_a_command_is_documented_where_its_command_is(command):
    """`--help` had options no doc named (ncu's --ncu and --timeout, profile's --nvtx-only, every
    option of compare-compile): each option's long form appears in its command's docs."""
    text = "\n".join((ROOT / "docs" / name).read_text() for name in DOCUMENTED_IN[command])
    named = set(OPTION.findall(text))
    undocumented = sorted({a.option_strings[-1] for a in options(PARSERS[command]).values()
                           if not set(a.option_strings) & named})
    assert not undocumented, f"visprof {command}: {', '.join(undocumented)} not in {', '.join(DOCUMENTED_IN[command])}"
