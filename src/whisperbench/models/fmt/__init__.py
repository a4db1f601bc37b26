"""One module per Whisper model format, each defining ``FORMAT = Format(...)``
(:class:`whisperbench.models.format.Format`); :func:`whisperbench.models.format.all_formats` finds them all.
A new format is a new module here: nothing else changes."""
