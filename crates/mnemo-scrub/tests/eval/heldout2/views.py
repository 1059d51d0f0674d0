from django import forms
from django.conf import settings
from django.contrib.auth import authenticate, login
from django.contrib.auth.tokens import default_token_generator
from django.shortcuts import redirect, render

import environ

env = environ.Env()
SECRET_KEY = env("DJANGO_SECRET_KEY")
PASSWORD_RESET_TIMEOUT = 3 * 24 * 3600


class LoginForm(forms.Form):
    username = forms.CharField(max_length=150)
    password = forms.CharField(widget=forms.PasswordInput, strip=False)


class SetPasswordForm(forms.Form):
    new_password1 = forms.CharField(label="New password", widget=forms.PasswordInput)
    new_password2 = forms.CharField(label="Repeat new password", widget=forms.PasswordInput)


def login_view(request):
    form = LoginForm(request.POST or None)
    if form.is_valid():
        user = authenticate(request, username=form.cleaned_data["username"],
                            password=form.cleaned_data["password"])
        if user is not None:
            login(request, user)
            return redirect(settings.LOGIN_REDIRECT_URL)
    return render(request, "login.html", {"form": form})


def reset_link(user):
    token = default_token_generator.make_token(user)
    return f"/reset/{user.pk}/{token}/"


def change_password(user, raw_password):
    user.set_password(raw_password)
    user.save(update_fields=["password"])


# tests/test_login.py fixtures
FAKE_SLACK_TOKEN = "xoxb-not-a-real-token"
TEST_PASSWORD = "test-password"
