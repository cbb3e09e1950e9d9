"""Built-in studies, one package each, registered as plug-ins."""
