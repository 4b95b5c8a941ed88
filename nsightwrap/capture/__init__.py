"""The zero-change capture layer, loaded into the user's process by ``nsightwrap profile``.

It records the timings an unmodified script makes and puts NVTX ranges around exactly what was
timed. Like ``timer``, it imports only ``core`` and ``timer`` (never ``analysis`` or ``export``),
and torch and triton only once the script has imported them.
"""
