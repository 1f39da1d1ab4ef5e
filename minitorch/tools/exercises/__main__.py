"""python3 -m minitorch.tools.exercises {list, start DIR, check NAME|all [--dir DIR | --solution], hint NAME,
survey DIR}."""
import argparse
import os
import shutil
import sys
from pathlib import Path

from . import EXAMPLES, EXERCISES, ExerciseFailed, check
from .catalog import BY_NAME
from .diagnose import COMMAND
from .loading import load

STUBS = Path(__file__).resolve().parent / "stubs"
DEFAULT_DIR = "minitorch-exercises"


def cmd_list(args):
    for number, e in enumerate(EXERCISES, 1):
        print(f"{number:>2}. {e.name:<14} {e.cls:<26} {e.title}")
    print(f"\nStart with `{COMMAND} start {DEFAULT_DIR}`; each stub's docstring says what to derive.")
    return 0


def cmd_start(args):
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    copied, kept = 0, []
    for e in EXERCISES:
        stub, target = STUBS / f"{e.name}.py", folder / f"{e.name}.py"
        if not target.exists():
            shutil.copyfile(stub, target)
            copied += 1
        elif target.read_bytes() != stub.read_bytes():  # never overwrite a student's work
            kept.append(target.name)
    print(f"copied {copied} stubs into {folder}/" + (f"; kept your {', '.join(kept)}" if kept else ""))
    first = EXERCISES[0].name
    print(f"begin with {folder / (first + '.py')}, then: {COMMAND} check {first} --dir {folder}")
    return 0


STEPS = ("what to derive first", "a nudge", "the answer")


def cmd_hint(args):
    e = BY_NAME[args.name]
    step = min(args.step, len(e.hints))
    for k in range(step):
        print(f"{e.name}, step {k + 1} of {len(e.hints)} ({STEPS[k]}): {e.hints[k]}")
    if step < len(e.hints):
        print(f"still stuck? {COMMAND} hint {e.name} --step {step + 1}")
    print(f"Once the check passes, read the derivation: {e.doc}")
    return 0


def cmd_check(args):
    chosen = EXERCISES if args.name == "all" else [BY_NAME[args.name]]
    failed = 0
    for e in chosen:
        try:
            notes = []
            n = check(e.name, None if args.solution else load(e, args.dir), args.examples, notes,
                      folder=None if args.solution else args.dir)
        except ExerciseFailed as failure:
            failed += 1
            print(f"FAIL {e.name}: {failure}")
            if len(chosen) == 1:
                print(f"     a hint, in steps: {COMMAND} hint {e.name}")
            continue
        against = "with central finite differences and " * hasattr(e, "apply")
        print(f"ok   {e.name}: {n} drawn cases agree {against}with the engine's {e.cls}")
        for note in notes:
            print(f"     note: {note}")
        if len(chosen) == 1:
            print(f"     now read the derivation: {e.doc}")
    if len(chosen) > 1:
        print(f"{len(chosen) - failed} of {len(chosen)} exercises pass")
    return 1 if failed else 0


def cmd_survey(args):
    from .survey import summary, survey
    rows = survey(args.dir)
    for name, verdict, said in rows:
        print(f"{verdict:<13} {name}")
        if args.verbose and said:
            print("              " + said.replace("\n", "\n              "))
    print(summary(rows))
    return 1 if any(v == "passed" for _, v, _ in rows) or not rows else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog=COMMAND, description=(
        "Graded exercises: the engine's walk, then the forward and backward of one Function at a time, from Mul to "
        "the LSTM cell."),
        allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the exercises in order").set_defaults(run=cmd_list)
    start = commands.add_parser("start", help="copy the stubs into a folder of yours (existing files are kept)")
    start.add_argument("dir", nargs="?", default=DEFAULT_DIR, help=f"default: {DEFAULT_DIR}")
    start.set_defaults(run=cmd_start)
    grade = commands.add_parser("check", help="grade one exercise (or all)", allow_abbrev=False)
    grade.add_argument("name", choices=[*BY_NAME, "all"], metavar="NAME", help=f"one of: {', '.join(BY_NAME)}, all")
    where = grade.add_mutually_exclusive_group()
    where.add_argument("--dir", default=DEFAULT_DIR, help=f"the folder of your files (default: {DEFAULT_DIR})")
    where.add_argument("--solution", action="store_true", help="grade the engine's own op instead")
    grade.add_argument("--examples", type=int, default=EXAMPLES, help=f"drawn cases per exercise (default: {EXAMPLES})")
    grade.set_defaults(run=cmd_check)
    hint = commands.add_parser("hint", help="a hint for one exercise, and where its derivation is")
    hint.add_argument("name", choices=list(BY_NAME), metavar="NAME", help=f"one of: {', '.join(BY_NAME)}")
    hint.add_argument("--step", type=int, default=1, choices=(1, 2, 3),
                      help="1: what to derive first, 2: a nudge, 3: the answer")
    hint.set_defaults(run=cmd_hint)
    survey = commands.add_parser("survey", help="grade a folder of wrong answers (EXERCISE__what.py, each with its "
                                                "MISTAKE) and count the named, numbers-only and false diagnoses")
    survey.add_argument("dir", help="e.g. tests/tools/wrong_answers")
    survey.add_argument("--verbose", action="store_true", help="print what the grader said of each")
    survey.set_defaults(run=cmd_survey)
    args = parser.parse_args(argv)
    if getattr(args, "examples", 1) < 1:
        parser.error("--examples must be at least 1")
    try:
        return args.run(args)
    except BrokenPipeError:  # `list | head`: the reader has gone, which is not an error here
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that the exit's flush cannot fail
        return 0
    except RuntimeError as e:  # a check that cannot run says why in one line
        print(f"{COMMAND}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
