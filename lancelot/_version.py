"""lancelot's release (pyproject.toml's ``version``): a leaf module, so that the layers below the
package's front door (a manifest's ``writer_version``, the CLI's ``--version``) read it without
importing ``lancelot`` itself."""

__version__ = "0.1.0"
