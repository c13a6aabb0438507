"""jaxguide_build.serve: the local server that serves the built site as GitHub Pages
does."""


def test_the_server_is_quiet_when_a_browser_hangs_up(tmp_path, capsys):
    """A client that closes its connection mid-response is not reported; other errors are."""
    from jaxguide_build import serve

    base, server = serve.serve(tmp_path)
    try:
        for error in (BrokenPipeError(), ConnectionResetError()):
            try:
                raise error
            except OSError:
                server.handle_error(None, ("127.0.0.1", 0))
        assert capsys.readouterr().err == ""
        try:
            raise ValueError("a real fault")
        except ValueError:
            server.handle_error(None, ("127.0.0.1", 0))
        assert "a real fault" in capsys.readouterr().err
    finally:
        server.shutdown()
        server.server_close()
