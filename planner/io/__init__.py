"""Instance files: the native problem form, PSPLIB and MMLIB, the JSON schema,
reference values and output paths."""
