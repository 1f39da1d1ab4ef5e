"""Run the `python -m train` CLI inside the test process, shared by the CLI tests."""
from train.__main__ import main


def run_cli(argv, capsys):
    """(exit status, stdout, stderr) of `python -m train ARGV`, whether main returns or exits."""
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    out, err = capsys.readouterr()
    return status, out, err
