"""Root URL configuration."""

from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config import views

# One sign-in for the whole site: the admin's login form redirects to allauth's, which is rate limited and
# requires a verified email address.
admin.site.login = secure_admin_login(admin.site.login)

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("status/", views.status_page, name="status"),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("api/", views.api_home, name="api-home"),
    path("api/v1/", views.api_home, name="api-root"),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file, so the CSP needs no inline script.
    path("api/v1/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/", include("config.api_urls")),
    path("", include("contributions.urls")),
    path("runs/", include("evaluation.urls")),
    path("", include("leaderboard.urls")),
]
