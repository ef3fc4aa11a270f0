"""Run the command line as ``python -m survey``."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="ldp-survey")
