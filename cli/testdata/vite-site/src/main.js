document.getElementById("msg").textContent = "hello from vite " + (2 + 40);
