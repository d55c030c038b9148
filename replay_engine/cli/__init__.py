"""The ``dsh-replay`` command line: ``dispatch`` parses it and imports only the module of the
subcommand given (``inspect``, ``validate``, ``serve``, ``override``, ``demo_agent``), so
``--help`` and ``validate`` start fast.
"""
