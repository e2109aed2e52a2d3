"""One adapter per framework: its tool seam wrapped so that each call goes through
``hooks.calls``. Each module names the module it patches (``MODULE``) and has
``install(module)`` / ``uninstall(module)``, a pair."""
