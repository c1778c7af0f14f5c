"""One module per ``securefl`` sub-command: ``add_parser(subparsers)`` and ``run(args)``."""
