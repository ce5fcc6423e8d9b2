"""``python -m debugger.cli``: the ``stepscope`` command."""

from debugger.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
