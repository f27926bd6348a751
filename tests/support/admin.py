"""A staff operator for the admin's pages, and the names of the admin's usage and billing views."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from tests.support.clients import client_for

CHANGELIST = "admin:agent_platform_modelrequest_changelist"
BILLING = "admin:agent_platform_billing"


@pytest.fixture
def staff(db):
    """An operator with staff access and permission to view runs, model requests and prices."""
    user = get_user_model().objects.create_user(username="olga", password="olga-password-123", is_staff=True)
    codenames = ["view_modelrequest", "view_price", "view_run", "view_event", "view_judgment"]
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


@pytest.fixture
def staff_client(staff):
    return client_for(staff)
