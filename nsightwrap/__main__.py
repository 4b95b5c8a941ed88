"""``python -m nsightwrap`` runs the same CLI as the ``nsightwrap`` command."""

from nsightwrap.cli import main

if __name__ == "__main__":
    main()
