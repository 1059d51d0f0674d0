def login(request):
    password = request.POST["password"]
    user = authenticate(username=request.POST["username"], password=password)
    if user is None:
        return render(request, "login.html", {"error": "Invalid password"})
