from triton.runtime import driver  # noqa: F401
