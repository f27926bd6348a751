"""Demo site URLs."""

app_name = "demo_site"
urlpatterns: list = []
