"""URLs of the recipe pages, and the run page's Make recipe."""

from django.urls import path

from . import views

app_name = "recipes"

urlpatterns = [
    path("recipes/", views.recipe_list, name="list"),
    path("recipes/<str:recipe_id>/", views.recipe_detail, name="detail"),
    path("recipes/<str:recipe_id>/update/", views.recipe_update, name="update"),
    path("recipes/<str:recipe_id>/replay/", views.recipe_replay, name="replay"),
    path("recipes/<str:recipe_id>/versions/<int:number>/", views.version_decide, name="decide"),
    path("runs/<str:run_id>/recipe/", views.recipe_make, name="make"),
]
