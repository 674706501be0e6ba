"""The commands: parse the user's words and hand them to the layers below."""
