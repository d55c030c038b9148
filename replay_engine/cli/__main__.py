"""``python -m replay_engine.cli``: the ``dsh-replay`` process without the console script."""

if __name__ == "__main__":
    from replay_engine.cli.dispatch import run

    run()
