#!/usr/bin/env python
"""Django's command-line utility for Momor."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "momor.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        _ = settings.INSTALLED_APPS  # the environment read now: a bad value is one line
    except ImproperlyConfigured as exc:
        sys.exit(f"ImproperlyConfigured: {exc}")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
